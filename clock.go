package drover

import "time"

// Clock is the source of time for schedules, timeouts and backoff, so that
// tests can use a fake clock.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }
