package fleet

import (
	"context"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/queue"
)

// The registrar's retire sweep (registrar.go): queues of families with
// retire_after that stay empty and idle leave the registry, safely.

// sweepStep looks at the next SweepCount registered queues of families
// that retire, and retires the empty idle ones.
func (t *term) sweepStep(ctx context.Context) {
	if !t.haveReg || t.reg.Buckets() == 0 {
		return
	}
	retiring := false
	for _, f := range t.fams {
		retiring = retiring || f.RetireAfter > 0
	}
	if !retiring {
		return
	}
	t.settlePending() // pending ones no snapshot settles: see pendingFor
	now := t.cfg.Clock.Now()
	retires := 0
	byFamily := map[string][]string{}
	var names []string
	seen := 0
	for visited := 0; visited < t.reg.Buckets() && seen < t.cfg.SweepCount; visited++ {
		if t.sweep >= t.reg.Buckets() {
			t.sweep = 0
		}
		names = t.reg.BucketQueues(names[:0], t.sweep)
		t.sweep++
		seen += len(names)
		for _, q := range names {
			if f, ok := t.fams.Match(q); ok && f.RetireAfter > 0 && !t.retired[q] {
				if _, ok := t.pending[q]; !ok {
					byFamily[f.Name] = append(byFamily[f.Name], q)
				}
			}
		}
	}
	for name, qs := range byFamily {
		f, _ := t.fams.Get(name)
		cutoff := now.Add(-f.RetireAfter.Std())
		st, err := t.cfg.Redis.CheckIdle(ctx, qs, cutoff)
		if err != nil {
			if ctx.Err() == nil {
				t.log.Warn("retire sweep: checking queues failed", "family", name, "error", err)
			}
			continue
		}
		for i, q := range qs {
			if st[i] == queue.QueueIdle && retires < maxRetiresPerStep {
				retires++
				t.retire(ctx, q, f, cutoff)
			}
		}
	}
}

// retire retires q, a queue of family f found idle since cutoff: the
// registry entry goes only if the Redis script still finds the queue empty
// and idle (and then deletes its keys), and a message that came in
// between the script and the registry delete is found by the check that
// follows, which registers the queue again.
func (t *term) retire(ctx context.Context, q string, f drover.FamilyConfig, cutoff time.Time) {
	redisRetired := false
	done, err := t.cfg.Registry.RetireQueue(ctx, q, f.Name, func(ctx context.Context) (bool, error) {
		st, err := t.cfg.Redis.Retire(ctx, q, cutoff)
		redisRetired = err == nil && st == queue.QueueIdle
		return redisRetired, err
	})
	if err != nil && ctx.Err() == nil {
		t.log.Warn("retiring a family queue failed", "queue", q, "family", f.Name, "error", err)
	}
	if !done {
		if redisRetired {
			// Its keys went, its registry entry stayed (an operator
			// changed it meanwhile, or ZooKeeper failed): a registered
			// queue stays listed in the Redis SET as well.
			t.addQueueNames(ctx, []drover.QueueConfig{{Name: q}})
		}
		return
	}
	t.retired[q] = true
	t.offsets = append(t.offsets, q)
	busy, err := t.cfg.Redis.HasMessages(ctx, q)
	if err != nil || busy {
		// A message came in while the queue was retired (or the check
		// failed: register it again rather than risk leaving one unrun).
		t.batch[q] = f.QueueFor(q)
		return
	}
	t.log.Debug("retired an idle family queue", "queue", q, "family", f.Name)
	if t.cfg.OnRetired != nil {
		t.cfg.OnRetired(q, f.Name)
	}
}

// dropOffsets deletes the offset nodes of retired queues no member owns
// any more (the owner writes it when it releases the queue).
func (t *term) dropOffsets(ctx context.Context) {
	rest := t.offsets[:0]
	for i, q := range t.offsets {
		if i >= t.cfg.SweepCount {
			rest = append(rest, q)
			continue
		}
		if _, again := t.batch[q]; again {
			continue // registered again: its offset is its own
		}
		done, err := t.cfg.Registry.DropOffset(ctx, q)
		if err != nil || !done {
			rest = append(rest, q)
		}
	}
	t.offsets = rest
}
