package registrar

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/queue"
)

// The registrar's retire sweep (registrar.go): queues of families with
// retire_after that stay empty and idle leave the registry, safely, a
// batch at a time (docs/decisions.md, "Issue 40: retirement is batched").
//
// A sweep step picks its candidates on the registrar's loop (from the
// registry snapshot: no I/O) and retires them on a goroutine of its own,
// one step at a time, so that the loop keeps draining the wake-ups of new
// queues meanwhile: the idle ones in one pipeline of checks, their Redis
// keys in one pipeline of retire scripts, their configs in a few packed
// ZooKeeper multis (coordinator.Queues.RetireMany), then one pipeline that
// looks at them again for a message that came in meanwhile. A wake-up the
// loop hears for a candidate while the step runs is kept and, if the step
// retired the queue, registers it again.

// sweepJob is what a sweep step hands its goroutine.
type sweepJob struct {
	byFamily map[string][]string // candidates to check, by family
	fams     map[string]drover.FamilyConfig
	now      time.Time
	// The retire index's entries to drop (no family of theirs retires,
	// or they are not registered) and to postpone (their family's
	// retire_after has not passed).
	drop  []string
	later []queue.EmptiedQueue
	// fromIndex and walked count the candidates the index gave and the
	// registered queues the backstop walked (the step's debug line).
	fromIndex, walked int
}

// retirement is the outcome of a sweep step's goroutine.
type retirement struct {
	gone      []coordinator.RetireCandidate // their config deleted
	busy      map[string]bool               // of gone: holding a message (or not known): register again
	fams      map[string]drover.FamilyConfig
	took      time.Duration
	fromIndex int
	walked    int
}

// sweepStep picks the candidates of a sweep step and returns the job of
// checking and retiring them, marking them retiring; false: nothing to do.
// The candidates are the retire index's queues whose family's retire_after
// has passed since a trim emptied them (one read of the index, on the
// loop, as the backstop scan's), and, as the backstop, the next
// SweepCount registered queues of families that retire.
func (t *term) sweepStep(ctx context.Context) (sweepJob, bool) {
	job := sweepJob{byFamily: map[string][]string{}, fams: map[string]drover.FamilyConfig{}, now: t.cfg.Clock.Now()}
	var wait time.Duration // the shortest retire_after
	for _, f := range t.fams {
		if ra := f.RetireAfter.Std(); ra > 0 && (wait == 0 || ra < wait) {
			wait = ra
		}
	}
	if !t.haveReg || wait == 0 {
		return job, false
	}
	t.settlePending() // pending ones no snapshot settles: see pendingFor
	t.indexCandidates(ctx, &job, wait)
	t.walkCandidates(&job)
	return job, len(job.byFamily) > 0 || len(job.drop) > 0 || len(job.later) > 0
}

// registering reports whether q is on its way to the registry: in the
// batch, in the CreateMany running now, or sent and not listed yet.
func (t *term) registering(q string) bool {
	_, batched := t.batch[q]
	_, pending := t.pending[q]
	return batched || pending || t.sending[q]
}

// candidate adds q, of family f, to job's candidates.
func (t *term) candidate(job *sweepJob, f drover.FamilyConfig, q string) {
	job.byFamily[f.Name] = append(job.byFamily[f.Name], q)
	job.fams[f.Name] = f
	t.retiring[q] = true
}

// indexCandidates adds to job the retire index's queues emptied at least
// wait (the shortest retire_after) ago whose own family's retire_after has
// passed; the entries of others are postponed to when it will have, and
// those the sweep will never retire are dropped. A failed read is logged:
// the next step reads again.
func (t *term) indexCandidates(ctx context.Context, job *sweepJob, wait time.Duration) {
	due, err := t.cfg.Redis.RetireCandidates(ctx, job.now.Add(-wait), maxRetiresPerStep)
	if err != nil {
		if ctx.Err() == nil {
			t.log.Warn("retire sweep: reading the retire index failed", "error", err)
		}
		return
	}
	for _, e := range due {
		q := e.Queue
		f, ok := t.fams.Match(q)
		switch {
		case !ok || f.RetireAfter <= 0 || t.retired[q]:
			job.drop = append(job.drop, q)
		case t.retiring[q]:
			// Already a candidate of this step.
		case t.registering(q):
			// Not registered yet: its trims note it again once it runs.
		case !t.reg.Has(q):
			job.drop = append(job.drop, q)
		case e.At.Add(f.RetireAfter.Std()).After(job.now):
			job.later = append(job.later, queue.EmptiedQueue{Queue: q, At: e.At.Add(f.RetireAfter.Std() - wait)})
		default:
			t.candidate(job, f, q)
			job.fromIndex++
		}
	}
}

// minWalkPass is the shortest time a pass of the backstop's walk over the
// registry takes: a small registry is not checked whole every step. A
// queue the sweep keeps (enqueued to lately, holding dead letters or ids
// inside their dedupe window) is scored in the retire index at the time
// it may retire, so walking it again sooner finds nothing: in the churn
// bench the 200 busy keys, kept a day by their caller ids, were checked
// every second once the churned keys had retired (1,600 Redis commands a
// second of an otherwise idle fleet).
const minWalkPass = time.Minute

// walkCandidates is the backstop: it adds to job the next SweepCount
// registered queues of families that retire, in turn, bucket by bucket,
// starting a new pass over the registry no sooner than minWalkPass after
// the last one started.
func (t *term) walkCandidates(job *sweepJob) {
	var names []string
	for visited := 0; visited < t.reg.Buckets() && job.walked < t.cfg.SweepCount; visited++ {
		if t.sweep >= t.reg.Buckets() {
			t.sweep = 0
		}
		if t.sweep == 0 {
			if !t.passStart.IsZero() && job.now.Sub(t.passStart) < minWalkPass {
				return
			}
			t.passStart = job.now
		}
		names = t.reg.BucketQueues(names[:0], t.sweep)
		t.sweep++
		job.walked += len(names)
		for _, q := range names {
			f, ok := t.fams.Match(q)
			if !ok || f.RetireAfter <= 0 || t.retired[q] || t.retiring[q] || t.registering(q) {
				continue
			}
			t.candidate(job, f, q)
		}
	}
}

// runSweep runs job (on its own goroutine: it touches none of the term's
// state) and returns what it retired.
func (t *term) runSweep(ctx context.Context, job sweepJob) retirement {
	start := t.cfg.Clock.Now()
	if err := t.cfg.Redis.TidyRetireIndex(ctx, job.drop, job.later); err != nil && ctx.Err() == nil {
		t.log.Warn("retire sweep: tidying the retire index failed", "error", err)
	}
	cands := t.idleCandidates(ctx, job)
	res := retirement{busy: map[string]bool{}, fams: job.fams, fromIndex: job.fromIndex, walked: job.walked}
	if len(cands) > 0 {
		res.gone, res.busy = t.retireBatch(ctx, cands, job)
	}
	res.took = t.cfg.Clock.Now().Sub(start)
	return res
}

// idleCandidates checks job's queues (one pipeline per family) and returns
// the idle ones, at most maxRetiresPerStep.
func (t *term) idleCandidates(ctx context.Context, job sweepJob) []coordinator.RetireCandidate {
	var cands []coordinator.RetireCandidate
	for name, qs := range job.byFamily {
		cutoff := job.now.Add(-job.fams[name].RetireAfter.Std())
		st, err := t.cfg.Redis.CheckIdle(ctx, qs, cutoff)
		if err != nil {
			if ctx.Err() == nil {
				t.log.Warn("retire sweep: checking queues failed", "family", name, "error", err)
			}
			continue
		}
		for i, q := range qs {
			if st[i] == queue.QueueIdle && len(cands) < maxRetiresPerStep {
				cands = append(cands, coordinator.RetireCandidate{Queue: q, Family: name})
			}
		}
	}
	return cands
}

// retireBatch retires cands, found idle: a registry entry goes only if
// the Redis script still finds its queue empty and idle (and then deletes
// its keys), and a message that came in between the script and the
// registry delete is found by the look that follows, which marks the
// queue busy: registered again.
func (t *term) retireBatch(ctx context.Context, cands []coordinator.RetireCandidate, job sweepJob) (gone []coordinator.RetireCandidate, busy map[string]bool) {
	redisRetired := map[string]bool{}
	passedOn := map[string]bool{}
	done, err := t.cfg.Registry.Queues.RetireMany(ctx, cands, func(ctx context.Context, passed []coordinator.RetireCandidate) ([]bool, error) {
		for _, c := range passed {
			passedOn[c.Queue] = true
		}
		byFamily := map[string][]int{}
		for i, c := range passed {
			byFamily[c.Family] = append(byFamily[c.Family], i)
		}
		ok := make([]bool, len(passed))
		var errs []error
		for name, idx := range byFamily {
			qs := make([]string, len(idx))
			for k, i := range idx {
				qs[k] = passed[i].Queue
			}
			st, err := t.cfg.Redis.RetireMany(ctx, qs, job.now.Add(-job.fams[name].RetireAfter.Std()))
			errs = append(errs, err)
			for k, i := range idx {
				if k < len(st) && st[k] == queue.QueueIdle {
					ok[i] = true
					redisRetired[qs[k]] = true
				}
			}
		}
		return ok, errors.Join(errs...)
	})
	if err != nil && ctx.Err() == nil {
		t.log.Warn("retiring family queues failed for some", "queues", len(cands), "error", err)
	}
	if err == nil {
		// Those whose config does not name their family (configured on
		// their own, or gone) are not the sweep's: out of the index.
		var foreign []string
		for _, c := range cands {
			if !passedOn[c.Queue] {
				foreign = append(foreign, c.Queue)
			}
		}
		if err := t.cfg.Redis.TidyRetireIndex(ctx, foreign, nil); err != nil && ctx.Err() == nil {
			t.log.Warn("retire sweep: dropping queues of no family from the retire index failed", "error", err)
		}
	}
	var kept, names []string
	for i, c := range cands {
		switch {
		case i < len(done) && done[i]:
			gone = append(gone, c)
			names = append(names, c.Queue)
		case redisRetired[c.Queue]:
			// Its keys went, its registry entry stayed (an operator
			// changed it meanwhile, or ZooKeeper failed): a registered
			// queue stays listed in the Redis SET as well.
			kept = append(kept, c.Queue)
		}
	}
	if len(kept) > 0 {
		if err := t.cfg.Redis.AddQueueNames(ctx, kept); err != nil && ctx.Err() == nil {
			t.log.Warn("listing family queues kept in Redis again failed", "queues", len(kept), "error", err)
		}
	}
	busy = map[string]bool{}
	if len(names) == 0 {
		return gone, busy
	}
	has, err := t.cfg.Redis.HasMessagesMany(ctx, names)
	if err != nil && ctx.Err() == nil {
		t.log.Warn("looking at retired family queues again failed for some; registering those again", "queues", len(names), "error", err)
	}
	for i, q := range names {
		// A message came in while the queue was retired (or the look
		// failed: register it again rather than risk leaving one unrun).
		if i >= len(has) || has[i] {
			busy[q] = true
		}
	}
	return gone, busy
}

// dropOffsetsInFlight bounds the DropOffset calls in flight at once (each
// three round trips on the session's connection), as the claims of a
// member are bounded.
const dropOffsetsInFlight = 64

// takeOffsets returns the offset nodes of retired queues to drop now,
// leaving none: those of queues registered again are their own.
func (t *term) takeOffsets() []string {
	var out []string
	for _, q := range t.offsets {
		if _, again := t.batch[q]; !again {
			out = append(out, q)
		}
	}
	t.offsets = nil
	return out
}

// dropOffsets deletes the offset nodes of retired queues (at most
// SweepCount of offsets) that no member owns any more (the owner writes it
// when it releases the queue), and returns those to try again. It runs on
// a goroutine of its own, beside the sweep steps: run as a sweep step's
// last part, its round trips (two thousand queues' at a time) held the next
// step back for most of the step's time in the churn bench.
func (t *term) dropOffsets(ctx context.Context, offsets []string) []string {
	n := min(len(offsets), t.cfg.SweepCount)
	dropped := make([]bool, n)
	sem := make(chan struct{}, dropOffsetsInFlight)
	var wg sync.WaitGroup
	for i, q := range offsets[:n] {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			done, err := t.cfg.Registry.Offsets.DropOffset(ctx, q)
			dropped[i] = err == nil && done
		}()
	}
	wg.Wait()
	var rest []string
	for i, q := range offsets {
		if i >= n || !dropped[i] {
			rest = append(rest, q)
		}
	}
	return rest
}

// afterSweep takes the outcome of a sweep step on the loop: the queues it
// retired count as retired until a snapshot no longer lists them; one
// that holds a message again, or whose wake-up the loop heard while the
// step ran, is registered again.
func (t *term) afterSweep(res retirement) {
	woken := t.woken
	t.retiring, t.woken = map[string]bool{}, map[string]bool{}
	for _, c := range res.gone {
		t.retired[c.Queue] = true
		t.offsets = append(t.offsets, c.Queue)
		if res.busy[c.Queue] || woken[c.Queue] {
			if _, ok := t.batch[c.Queue]; !ok {
				t.batch[c.Queue] = res.fams[c.Family].QueueFor(c.Queue)
			}
			continue
		}
		if t.cfg.OnRetired != nil {
			t.cfg.OnRetired(c.Queue, c.Family)
		}
	}
	if len(res.gone) > 0 || res.fromIndex > 0 {
		t.log.Debug("retired idle family queues", "queues", len(res.gone), "registered-again", len(res.busy),
			"from-index", res.fromIndex, "walked", res.walked, "took", res.took)
	}
}
