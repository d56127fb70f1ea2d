package fleet

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover/rebalance"
)

// Removals are written in batches while a family churns
// (docs/decisions.md, "Issue 40: removals wait for the next removals'
// write while keys are placed"). Taking queues out of their owners'
// shares rewrites every chunk that held one, and a retire step's 1,000–
// 2,000 queues are in nearly every chunk of every share: at 190,000
// queues each removal write took p50 64 ms, p90 199 ms, up to 970 ms, on
// the leader's loop, about once a second, while the new keys placed
// beside them waited. A removal need not be prompt: the queue is gone from
// the registry, its owner's loop for it idles (a deleted configuration
// leaves the assignment, reconciler.updateConfig), and an enqueue that
// registers it again finds it still assigned where it ran. So while new
// queues are being placed, the queues removed wait, for at most
// removalsEvery or until maxDeferredRemovals of them wait, and go out
// together: the rewrite of a share's chunks costs about the same for
// 5,000 queues as for 1,000. Keys are being placed when any was placed,
// by the registry watch or ahead of it from the registrar (a churning
// family's are, almost all), less than removalsEvery ago. A removal with
// nothing placed for that long (a calm fleet, an operator's `queue rm`)
// is written at once, as before.

const (
	// removalsEvery bounds how long a removal waits for the next write.
	removalsEvery = 5 * time.Second
	// maxDeferredRemovals bounds the removals waiting.
	maxDeferredRemovals = 20000
)

// deferRemoval notes q, removed from the registry at now, for the next removals'
// write.
func (p *placement) deferRemoval(now time.Time, q rebalance.Queue) {
	if p.deferred == nil {
		p.deferred = map[string]rebalance.Queue{}
	}
	if len(p.deferred) == 0 {
		p.deferredSince = now
	}
	p.deferred[q.Name] = q
}

// dueRemovals returns the removals to write now, and forgets them: all
// that wait unless new queues were placed less than removalsEvery ago
// (keys are being placed), the first waited less than removalsEvery and
// fewer than maxDeferredRemovals wait; all of them when force is set.
func (p *placement) dueRemovals(now time.Time, force bool) []rebalance.Queue {
	if len(p.deferred) == 0 {
		return nil
	}
	placing := !p.placedAt.IsZero() && now.Sub(p.placedAt) < removalsEvery
	if !force && placing && len(p.deferred) < maxDeferredRemovals && now.Sub(p.deferredSince) < removalsEvery {
		return nil
	}
	out := make([]rebalance.Queue, 0, len(p.deferred))
	for _, name := range slices.Sorted(maps.Keys(p.deferred)) {
		out = append(out, p.deferred[name])
	}
	p.deferred = nil
	return out
}

// removalsDue reports when the removals waiting are due, if any wait.
func (p *placement) removalsDue() (time.Time, bool) {
	if len(p.deferred) == 0 {
		return time.Time{}, false
	}
	return p.deferredSince.Add(removalsEvery), true
}

// flushRemovals writes the removals waiting, if any (before a correction:
// it balances the loads without them).
func (p *placement) flushRemovals(ctx context.Context, now time.Time, lead Leadership, w AssignmentWriter, log hclog.Logger) error {
	rm := p.dueRemovals(now, true)
	if len(rm) == 0 || p.placer == nil {
		return nil
	}
	_, err := p.update(ctx, lead, w, nil, rm, log)
	return err
}
