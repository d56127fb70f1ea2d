package scaler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drover-dev/drover"
)

// Fleet is what the scaler reads. Implementations must be safe for
// concurrent use.
type Fleet interface {
	// Queues lists every queue the fleet knows (configured or enqueued to).
	Queues(ctx context.Context) ([]string, error)
	// Backlogs measures queues, each after its committed offset, in the
	// order given (the scaler reads Lag and OldestAge). Measure calls it
	// with at most MeasureBatch queues: an implementation reads them in a
	// few round trips, not one per queue.
	Backlogs(ctx context.Context, queues []string) ([]drover.Backlog, error)
}

// MeasureBatch is the most queues Measure passes to one Fleet.Backlogs.
const MeasureBatch = 1000

// Figures are a selection's backlog at one moment.
type Figures struct {
	Queues        int           // queues selected
	QueuesWithLag int           // of them, queues with at least one message after the offset
	Lag           int64         // sum of the lags
	OldestAge     time.Duration // the largest oldest-message age
}

// Measure reads the backlog of every queue the selection matches. A
// selection naming a queue that is not known is ErrUnknownQueue (with the
// names); one with a pattern (a glob or a prefix) that matches no queue is
// ErrNoQueues naming the pattern, even beside patterns that match: a
// misspelt prefix next to a good one would otherwise be measured as
// nothing, silently (issue 41).
func Measure(ctx context.Context, f Fleet, sel Selection) (Figures, error) {
	all, err := f.Queues(ctx)
	if err != nil {
		return Figures{}, fmt.Errorf("list queues: %w", err)
	}
	var unknown []string
	for _, n := range sel.names() {
		if !slices.Contains(all, n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return Figures{}, fmt.Errorf("%w: %s (selection %s)", ErrUnknownQueue, strings.Join(unknown, ", "), sel)
	}
	var (
		fig   Figures
		batch = make([]string, 0, MeasureBatch)
	)
	measure := func() error {
		bs, err := f.Backlogs(ctx, batch)
		if err != nil {
			return fmt.Errorf("backlog of %d queues (%s…): %w", len(batch), batch[0], err)
		}
		for _, b := range bs {
			fig.Add(b)
		}
		batch = batch[:0]
		return nil
	}
	seen := make([]bool, len(sel.patterns))
	for _, q := range all {
		if !sel.matchEach(q, seen) {
			continue
		}
		if batch = append(batch, q); len(batch) == MeasureBatch {
			if err := measure(); err != nil {
				return Figures{}, err
			}
		}
	}
	if len(batch) > 0 {
		if err := measure(); err != nil {
			return Figures{}, err
		}
	}
	if fig.Queues == 0 {
		return Figures{}, fmt.Errorf("%w: %s", ErrNoQueues, sel)
	}
	var unmatched []string
	for i, ok := range seen {
		if !ok {
			unmatched = append(unmatched, sel.patterns[i])
		}
	}
	if len(unmatched) > 0 {
		return Figures{}, fmt.Errorf("%w: %s (selection %s: check for a misspelt prefix or glob)", ErrNoQueues, strings.Join(unmatched, ", "), sel)
	}
	return fig, nil
}

// Add counts one more selected queue, whose backlog is b.
func (f *Figures) Add(b drover.Backlog) {
	f.Queues++
	if b.Lag > 0 {
		f.QueuesWithLag++
		f.Lag += b.Lag
	}
	f.OldestAge = max(f.OldestAge, b.OldestAge)
}

// Autoscale is the scaler's answer for a target lag, as `drover ctl
// status` shows it for every queue.
type Autoscale struct {
	TargetLag     int64 `json:"target_lag"`
	Lag           int64 `json:"lag"`
	QueuesWithLag int   `json:"queues_with_lag"`
	WorkersNeeded int64 `json:"workers_needed"`
}

// Autoscale is f's answer for target (> 0).
func (f Figures) Autoscale(target int64) Autoscale {
	return Autoscale{TargetLag: target, Lag: f.Lag, QueuesWithLag: f.QueuesWithLag, WorkersNeeded: f.WorkersNeeded(target)}
}

// AutoscaleOf is the answer for target over queues whose lags are lags,
// counted as Measure counts a selection's: `drover ctl status` gives it for
// every queue from the lags it has already read.
func AutoscaleOf(lags []int64, target int64) Autoscale {
	var f Figures
	for _, lag := range lags {
		f.Add(drover.Backlog{Lag: lag})
	}
	return f.Autoscale(target)
}

// LagMetric is the lag clamped to QueuesWithLag × target: the value whose
// ceil(value / target) is the number of workers to run, never more than the
// queues that have work. target must be > 0.
func (f Figures) LagMetric(target int64) int64 {
	return min(f.Lag, int64(f.QueuesWithLag)*target)
}

// WorkersNeeded is ceil(LagMetric / target): how many workers keep every
// selected queue's lag at or under target (at most one per queue with lag).
func (f Figures) WorkersNeeded(target int64) int64 {
	return (f.LagMetric(target) + target - 1) / target
}

// AgeMetric is the oldest age in seconds, clamped to QueuesWithLag ×
// target like LagMetric.
func (f Figures) AgeMetric(target time.Duration) float64 {
	return min(f.OldestAge.Seconds(), float64(f.QueuesWithLag)*target.Seconds())
}

// Active reports whether the selection needs a worker at all: its lag is
// above the spec's activation threshold.
func (f Figures) Active(sp Spec) bool { return f.Lag > sp.ActivationLag }
