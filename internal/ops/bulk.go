package ops

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/drover-dev/drover"
)

// Bulk actions (issue 34): a selection by match or by name, acted on in
// batches.

// MaxBulk bounds the queues one bulk action may select.
const MaxBulk = 100_000

// bulkParallelism bounds the per-queue Redis calls of a bulk dead-letter
// action in flight.
const bulkParallelism = 16

// Select returns the queues a bulk action acts on: the named ones (each
// must be known: listed, or by KnownQueue), or those m selects. It refuses
// an empty selection and one of more than MaxBulk queues.
func (o Find) Select(ctx context.Context, m Match, named []string) ([]string, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if (m == "") == (len(named) == 0) {
		return nil, badInput("select queues: give a match (prefix or pattern) or queue names, one of the two")
	}
	names, _, err := o.queueNames(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	if m != "" {
		if out, err = o.filter(ctx, m, names); err != nil {
			return nil, err
		}
	} else {
		seen := map[string]bool{}
		for _, q := range named {
			// Listed, or known by the one rule (a family's key before its
			// first enqueue is in no listing): the answer every surface gives.
			if i := sort.SearchStrings(names, q); i == len(names) || names[i] != q {
				if err := o.knownQueue(ctx, q); err != nil {
					return nil, err
				}
			}
			if !seen[q] {
				seen[q] = true
				out = append(out, q)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("select queues: no queue matches %q: %w", string(m), drover.ErrNotFound)
	}
	if len(out) > MaxBulk {
		return nil, badInput("select queues: %d match, more than the %d one action may take", len(out), MaxBulk)
	}
	return out, nil
}

// BulkResult is what a bulk action did.
type BulkResult struct {
	Action   string `json:"action"`
	Selected int    `json:"selected"` // queues selected
	Changed  int    `json:"changed"`  // queues (pause, resume) or dead letters (retry, purge) acted on
	Failed   int    `json:"failed,omitempty"`
	// Errors are the first few failures, "queue: error".
	Errors []string `json:"errors,omitempty"`
	// Millis is how long the action took.
	Millis int64 `json:"ms"`
}

// Pause sets the pause flag of every queue in queues (by who, with
// reason) in batched ZooKeeper multis (coordinator.Pauses.SetQueues).
func (o Find) Pause(ctx context.Context, queues []string, who, reason string) (BulkResult, error) {
	if err := drover.CheckReason("reason", reason); err != nil { // before any multi: one reason per queue
		return BulkResult{Action: "pause", Selected: len(queues)}, err
	}
	start := time.Now()
	n, err := o.zk.Pauses().SetQueues(ctx, queues, drover.Pause{By: who, At: o.now().UTC(), Reason: reason})
	return BulkResult{Action: "pause", Selected: len(queues), Changed: n, Millis: time.Since(start).Milliseconds()}, err
}

// Resume clears the pause flags of queues in batched multis; a queue
// not paused is left alone (not counted).
func (o Find) Resume(ctx context.Context, queues []string) (BulkResult, error) {
	start := time.Now()
	n, err := o.zk.Pauses().ClearQueues(ctx, queues)
	return BulkResult{Action: "resume", Selected: len(queues), Changed: n, Millis: time.Since(start).Milliseconds()}, err
}

// MaxRetryPerQueue bounds the dead letters one bulk retry puts back per
// queue; run it again for more.
const MaxRetryPerQueue = 1000

// RetryDead puts back up to MaxRetryPerQueue dead letters of each
// queue in queues (those with none cost one pipelined read, shared).
func (o Find) RetryDead(ctx context.Context, queues []string) (BulkResult, error) {
	return o.eachDead(ctx, "retry-dead", queues, func(ctx context.Context, q string) (int, error) {
		dls, err := o.store.Dead().DeadLetters(ctx, q, 0, MaxRetryPerQueue)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, dl := range dls {
			if _, err := o.store.Dead().RetryDead(ctx, q, dl.ID); err != nil && !errors.Is(err, drover.ErrNotFound) {
				return n, err
			}
			n++
		}
		return n, nil
	})
}

// PurgeDead deletes every dead letter of each queue in queues.
func (o Find) PurgeDead(ctx context.Context, queues []string) (BulkResult, error) {
	return o.eachDead(ctx, "purge-dead", queues, o.store.Dead().PurgeAllDead)
}

// eachDead runs f on the queues of queues that have dead letters (found
// with one pipelined read of every queue's figures), bulkParallelism at a
// time; a queue's failure is counted and the others go on.
func (o *core) eachDead(ctx context.Context, action string, queues []string, f func(ctx context.Context, q string) (int, error)) (BulkResult, error) {
	start := time.Now()
	res := BulkResult{Action: action, Selected: len(queues)}
	stats, err := o.store.Inspector().Stats(ctx, queues, make([]drover.Position, len(queues)))
	if err != nil {
		return res, err
	}
	var mu sync.Mutex
	sem := make(chan struct{}, bulkParallelism)
	var wg sync.WaitGroup
	for i, q := range queues {
		if stats[i].Dead == 0 {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			n, err := f(ctx, q)
			mu.Lock()
			defer mu.Unlock()
			res.Changed += n
			if err != nil {
				res.Failed++
				if len(res.Errors) < 5 {
					res.Errors = append(res.Errors, q+": "+err.Error())
				}
			}
		}()
	}
	wg.Wait()
	res.Millis = time.Since(start).Milliseconds()
	return res, ctx.Err()
}
