// Package clock holds the waits on the real clock that a context (and a
// lifetime's Done channel) can cut short: the retry pauses of fleet and the
// fault schedule of the chaos harness share them.
package clock

import (
	"context"
	"time"
)

// Sleep waits d unless ctx ends first. It reports whether the whole d
// passed: false means ctx ended.
func Sleep(ctx context.Context, d time.Duration) bool { return SleepOrDone(ctx, d, nil) }

// SleepOrDone waits d unless ctx ends or done closes first (a nil done never
// does). It reports whether the whole d passed: false means ctx ended or done
// closed. The timer is stopped on every return.
func SleepOrDone(ctx context.Context, d time.Duration, done <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-done:
		return false
	}
}
