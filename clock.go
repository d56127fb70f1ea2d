package drover

import "time"

// Clock is the source of time for schedules, timeouts and backoff, so that
// tests can use a fake clock.
type Clock interface {
	Now() time.Time
}

// TimerClock is a Clock that also makes timers: loops that wait on time
// (the worker's queue loops and its freeze guard) take one, so that a test
// advances a fake clock instead of sleeping.
type TimerClock interface {
	Clock
	// NewTimer returns a timer that delivers the clock's time on C once d
	// has passed (at once when d ≤ 0).
	NewTimer(d time.Duration) Timer
}

// Timer is a TimerClock's timer, as time.Timer.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was
	// active.
	Stop() bool
	// Reset makes the timer fire d from now; it reports whether it was
	// active.
	Reset(d time.Duration) bool
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer returns a time.Timer.
func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (s systemTimer) C() <-chan time.Time        { return s.t.C }
func (s systemTimer) Stop() bool                 { return s.t.Stop() }
func (s systemTimer) Reset(d time.Duration) bool { return s.t.Reset(d) }
