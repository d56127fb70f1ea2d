package worker

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/drover-dev/drover"
)

// Per-queue rate limits (drover.RateLimit; docs/one-queue-per-key.md,
// "Rate limits"). The queue's one owner enforces its limit with a token
// bucket (golang.org/x/time/rate, driven by the worker's clock through its
// *At methods): exact, with no distributed limiter. A queue whose work waits
// for a token parks like any idle queue (no goroutine, no timer of its own)
// and the worker's idle scheduler, one per member, signals it when the
// token is due (DESIGN.md §10). A change of the limit reaches the bucket at
// the loop's next iteration, and a parked, held queue is signalled at once,
// so that it needs no rebalance and no wait for the old rate's token.

// loopExtras is the state of a queue loop that only rate-limited and parked
// queues need; the loop keeps a pointer to it (nil otherwise), so that every
// other queue's record stays within its allocator size class. Only the run
// goroutine touches it.
type loopExtras struct {
	limiter  *rate.Limiter // nil: no limit
	tokenDue time.Time     // when the next token is due, while rate-held

	// The park hold (parkhead.go): set when the queue parked itself at a
	// failed head, until the pause it wrote is seen lifted.
	holding   bool
	sawPause  bool        // the worker has seen the queue's pause flag since the hold began
	holdPause *PauseState // the worker's pause state when the hold began
}

// extra returns the loop's extras, made on first use.
func (l *queueLoop) extra() *loopExtras {
	if l.extras == nil {
		l.extras = &loopExtras{}
	}
	return l.extras
}

// dropExtras frees the extras when nothing in them is in use.
func (l *queueLoop) dropExtras() {
	if x := l.extras; x != nil && x.limiter == nil && !x.holding {
		l.extras = nil
	}
}

// limiter returns the queue's token bucket, made to follow its
// configuration (nil when the queue has no limit). A changed rate or burst
// applies from now; the tokens kept are kept (capped to a smaller burst).
func (l *queueLoop) limiter(cfg *drover.QueueConfig, now time.Time) *rate.Limiter {
	rl := cfg.RateLimit
	if !rl.Enabled() {
		if l.extras != nil && l.extras.limiter != nil {
			l.extras.limiter = nil
			l.dropExtras()
		}
		return nil
	}
	x := l.extra()
	r, b := rate.Limit(rl.PerSecond), rl.BurstOrDefault()
	if x.limiter == nil {
		x.limiter = rate.NewLimiter(r, b) // full: a queue's first messages start at once
		return x.limiter
	}
	if x.limiter.Limit() != r {
		x.limiter.SetLimitAt(now, r)
	}
	if x.limiter.Burst() != b {
		x.limiter.SetBurstAt(now, b)
	}
	return x.limiter
}

// takeToken takes a token of lim for a message start, or, when none is
// left, records when the next one is due (the queue is rate-held) and
// returns nil. The reservation lets the caller give the token back.
func (l *queueLoop) takeToken(lim *rate.Limiter, now time.Time) *rate.Reservation {
	r := lim.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		l.extra().tokenDue = now.Add(wait)
		l.rateHeld.Store(true)
		return nil
	}
	return r
}

// tokenDue returns when the rate-held queue's next token is due, and
// whether it is rate-held.
func (l *queueLoop) tokenDue() (time.Time, bool) {
	if !l.rateHeld.Load() || l.extras == nil {
		return time.Time{}, false
	}
	return l.extras.tokenDue, true
}
