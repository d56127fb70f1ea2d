package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/shrink"
)

// ReconcilerConfig configures RunReconciler.
type ReconcilerConfig struct {
	// Session is the coordination session the member joined. Required.
	Session ReconcilerSession
	// Member is this member's name, as in the assignment. Required.
	Member string
	// MemberPath is this member's node (Membership.Path), written into
	// owner nodes.
	MemberPath string
	// Runner runs the owned queues. Required.
	Runner Runner
	// OnGeneration, if set, is called with each assignment generation once
	// this member has acted on it (stops begun, claims begun).
	OnGeneration func(gen int64)
	// GivingUp, if set, reports whether this member is giving its queues
	// up: it is leaving the fleet, or it cannot reach Redis (RedisHealth).
	// A queue a new target takes away is then stopped with
	// drover.StopLeave (the drain timeout), and the planned stops in
	// progress are cut to it; otherwise the move is planned
	// (drover.StopPlanned: the running tasks finish, nothing is killed).
	// Nil: never.
	GivingUp func() bool
	Logger   hclog.Logger
}

// A queue the runner loses on its own — a commit or a verification fenced
// because an operator reset the offset, say — is learnt from its claim, once:
// the runner holds the coordinator's claim itself (it commits straight
// through it, in batches with the session's other claims), and the
// reconciler asks each claim it starts to report its end (Claim.OnEnd: a
// callback, not a goroutine per claim waiting on Done — DESIGN.md §10). A
// report cannot be dropped (endedClaims). The reconciler forgets the claim
// and, if the queue is still assigned here, claims it again, reading the
// offset afresh.

// maxClaimGoroutines bounds the claim goroutines of one reconciler: as
// many as one session sends at a time (coordinator's maxClaimsInFlight);
// a goroutine also holds its queue through the wait for a release and the
// config read after the claim, outside that bound.
const maxClaimGoroutines = 256

// maxEarlyReads is how many claims may run for a queue's config to be
// read beside its claim rather than after it (claimAs).
const maxEarlyReads = 16

// claimRetry bounds the pause between claim attempts that failed for a
// reason other than "still owned".
const claimRetry = 500 * time.Millisecond

// RunReconciler makes this member own exactly the queues the assignment
// gives it (DESIGN.md §5 step 3). Queues that move away are stopped (drained
// and released) and only those; gained queues are claimed as soon as their
// previous owner has released them or its session has ended; queues that
// stay keep running untouched. A target that changes mid-way is followed:
// claims of queues no longer assigned are abandoned, stops are awaited
// before a queue is claimed again.
//
// It returns when ctx ends — after stopping every owned queue gracefully —
// or when the session is lost — after aborting every owned queue — with an
// error wrapping drover.ErrSessionLost.
func RunReconciler(ctx context.Context, cfg ReconcilerConfig) error {
	if cfg.Session == nil || cfg.Member == "" || cfg.Runner == nil {
		return fmt.Errorf("reconciler: %w: Session, Member and Runner are required", drover.ErrInvalidConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	r := &reconciler{
		s: cfg.Session, cfg: cfg, log: cfg.Logger.With("member", cfg.Member),
		owned:        map[string]Claim{},
		claiming:     map[string]context.CancelFunc{},
		stopping:     map[string]chan struct{}{},
		handing:      map[string]bool{},
		claimCfgs:    map[string]drover.QueueConfig{},
		unconfigured: map[string]bool{},
		configSums:   map[string]configSum{},
		events:       make(chan reconcileEvent),
		ended:        endedClaims{signal: make(chan struct{}, 1)},
	}
	return r.run(ctx)
}

type reconciler struct {
	s   ReconcilerSession
	cfg ReconcilerConfig
	log hclog.Logger
	// untilLost ends when the session is lost (or run returns): the
	// context of every hand-back, so that a loss aborts queues mid-drain.
	untilLost context.Context

	// Owned by the run goroutine.
	target   map[string]bool          // queues assigned to this member
	share    []coordinator.ShareChunk // the share target was last applied from (nil: a whole assignment)
	gen      int64
	owned    map[string]Claim              // running
	claiming map[string]context.CancelFunc // claim goroutines
	stopping map[string]chan struct{}      // closed when the stop is done
	handing  map[string]bool               // stopping for a planned move, not cut (cutHandovers)
	stops    []handBackItem                // stopped since the last flushStops
	// The owned queues' configurations are the runner's: the reconciler
	// keeps a digest of each, as last handed over, to pass on changes only
	// (a full copy cost ~250 bytes a queue; docs/decisions.md, "Issue 14:
	// one compact record per owned queue"). A configuration that changes
	// while its queue is being claimed is kept whole until Start takes it.
	configSums map[string]configSum
	claimCfgs  map[string]drover.QueueConfig
	// unconfigured are assigned queues claimed without a configuration
	// (removed after the target was written): released unused, their
	// config followed, and claimed again if one appears while they are
	// still assigned here.
	unconfigured map[string]bool
	cfgWatch     ConfigWatch // follows the owned queues' configs; read by claim goroutines
	events       chan reconcileEvent
	// Claim goroutines running, and queues waiting for one (in order).
	claimsRunning int
	waiting       []string        // may hold names cancelled since: see waitingSet
	waitingSet    map[string]bool // the names in waiting still to claim, with their claimAs hint
	pending       int             // goroutines that will send an event
	ended         endedClaims     // claims the runner lost, reported by the claims
	// peaks are the per-queue maps' largest sizes since their last
	// rebuild (compact).
	peaks struct{ target, owned, configSums, claiming, stopping, handing int }
}

// reconcileEvent is a claim or stop goroutine's report.
type reconcileEvent struct {
	queue string
	claim Claim // a claim goroutine succeeded
	// config is the queue's configuration read right after the claim (nil
	// when it could not be read), for a queue the queues watch has not
	// delivered yet.
	config  *drover.QueueConfig
	claimed bool // a claim goroutine ended (claim may be nil: gave up)
	stopped bool // a stop goroutine ended
}

func (r *reconciler) run(ctx context.Context) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Hand-backs outlive ctx (a graceful leave drains) but not the
	// session: a loss cuts every drain in progress at once.
	var stopLossWatch context.CancelFunc
	r.untilLost, stopLossWatch = context.WithCancel(context.Background())
	go func() {
		select {
		case <-r.s.Done():
			stopLossWatch()
		case <-r.untilLost.Done():
		}
	}()
	defer stopLossWatch()
	assignments := r.s.WatchShare(wctx, r.cfg.Member)
	// Only the owned queues' configs are watched: a member needs nothing of
	// the rest of the registry (the rebalance leader watches all of it).
	// Each is read once, by the goroutine that claims the queue.
	r.cfgWatch = r.s.WatchQueueConfigs(wctx)
	configs := r.cfgWatch.Changes()
	var exit error
loop:
	for {
		select {
		case an, ok := <-assignments:
			if !ok {
				break loop
			}
			if an.Err != nil {
				r.log.Warn("ignoring a corrupt assignment", "error", an.Err)
				continue
			}
			r.apply(wctx, an)
		case e, ok := <-configs:
			if !ok {
				break loop
			}
			r.updateConfig(wctx, e)
		case ev := <-r.events:
			r.handle(wctx, ev)
		case <-r.ended.signal:
			r.lost(wctx, r.ended.take())
		case <-ctx.Done():
			break loop
		case <-r.s.Done():
			break loop
		}
		r.compact()
	}
	exit = firstErr(r.s.Err(), ctx.Err(), errors.New("reconciler: watch ended"))
	lost := r.s.Err() != nil
	// Stop claiming; then give up every owned queue: gracefully while the
	// session lives, by abort once it is lost.
	for _, c := range r.claiming {
		c()
	}
	if lost {
		// Every owned queue at once (DESIGN.md §11, "Session loss"): the
		// runner tells all of them before it waits for any.
		qs := make([]string, 0, len(r.owned))
		for q := range r.owned {
			qs = append(qs, q)
		}
		clear(r.owned)
		r.cfg.Runner.Abort(qs...)
	} else {
		r.cutHandovers() // leaving: the drain timeout from now
		for q := range r.owned {
			r.stop(q, drover.StopLeave)
		}
		r.flushStops(drover.StopLeave)
	}
	for r.pending > 0 {
		ev := <-r.events
		r.pending--
		if ev.claim != nil { // a claim that raced the shutdown
			if lost {
				ev.claim.Abandon(context.Background())
			} else {
				ev.claim.Release(context.Background(), ev.claim.Offset())
			}
		}
	}
	return exit
}

// apply reacts to a new target. A share delivered as chunks (WatchShare)
// is compared with the last one applied, chunk by chunk (applyShare); a
// whole assignment is applied whole.
func (r *reconciler) apply(ctx context.Context, an coordinator.AssignmentNode) {
	a := an.Assignment
	if a.Generation < r.gen {
		return
	}
	r.gen = a.Generation
	// A queue taken away while this member stays is a planned move: its
	// running tasks finish. One taken away while it gives its queues up
	// (leaving, or cut off from Redis) drains, and so do the planned stops
	// still waiting (docs/semantics.md, "Moves").
	kind := drover.StopPlanned
	if r.cfg.GivingUp != nil && r.cfg.GivingUp() {
		kind = drover.StopLeave
		r.cutHandovers()
	}
	if an.Share != nil {
		r.applyShare(ctx, an.Share, kind)
	} else {
		target := map[string]bool{}
		for q, m := range a.Queues {
			if m == r.cfg.Member {
				target[q] = true
			}
		}
		r.share = nil
		r.retarget(ctx, target, nil, kind)
	}
	r.flushStops(kind)
	if r.cfg.OnGeneration != nil {
		r.cfg.OnGeneration(a.Generation)
	}
}

// applyShare applies a share given as chunks. Only the chunks whose
// generation moved since the last share applied are looked at: while a
// family's new queues arrive, a generation adds a few hundred queues to
// one appended chunk, and going over the whole target (25,000 queues a
// member at 100,000) at each of dozens of generations a second took a
// quarter of a member's CPU and delayed the claims' events behind it
// (docs/decisions.md, "A member applies what changed in its share").
// Queues of a chunk marked New are claimed without reading their offset
// first (Owner.New). Queues no chunk lists any more are stopped as kind.
func (r *reconciler) applyShare(ctx context.Context, share []coordinator.ShareChunk, kind drover.StopKind) {
	old := r.share
	r.share = share
	if old == nil || r.target == nil {
		target, fresh := map[string]bool{}, map[string]bool{}
		for _, c := range share {
			for _, q := range c.Queues {
				target[q] = true
				if c.New {
					fresh[q] = true
				}
			}
		}
		r.retarget(ctx, target, fresh, kind)
		return
	}
	var added []string
	removed, fresh := map[string]bool{}, map[string]bool{}
	for i := range max(len(old), len(share)) {
		var o, n coordinator.ShareChunk
		if i < len(old) {
			o = old[i]
		}
		if i < len(share) {
			n = share[i]
		}
		if i < len(old) && i < len(share) && o.Generation == n.Generation {
			continue // unchanged: a chunk is rewritten at a new generation
		}
		diffSorted(o.Queues, n.Queues, func(q string) {
			added = append(added, q)
			if n.New {
				fresh[q] = true
			}
		}, func(q string) { removed[q] = true })
	}
	gained := added[:0]
	for _, q := range added {
		if removed[q] {
			delete(removed, q) // moved to another chunk: still ours
			continue
		}
		gained = append(gained, q)
	}
	for q := range removed {
		delete(r.target, q)
		if r.owned[q] != nil {
			r.stop(q, kind)
		}
		if cancel := r.claiming[q]; cancel != nil {
			cancel()
		}
	}
	sort.Strings(gained)
	for _, q := range gained {
		r.target[q] = true
		if r.owned[q] == nil && r.claiming[q] == nil {
			r.claimAs(ctx, q, fresh[q])
		}
	}
}

// diffSorted calls add for each name of next not in prev and remove for
// each of prev not in next; both sorted (a chunk as written), else sorted
// copies are compared.
func diffSorted(prev, next []string, add, remove func(string)) {
	if !slices.IsSorted(prev) {
		prev = slices.Sorted(slices.Values(prev))
	}
	if !slices.IsSorted(next) {
		next = slices.Sorted(slices.Values(next))
	}
	i, j := 0, 0
	for i < len(prev) || j < len(next) {
		switch {
		case j == len(next) || (i < len(prev) && prev[i] < next[j]):
			remove(prev[i])
			i++
		case i == len(prev) || next[j] < prev[i]:
			add(next[j])
			j++
		default:
			i++
			j++
		}
	}
}

// retarget makes target (queue → true) the queues assigned here: owned
// queues not in it are stopped as kind, claims of queues not in it
// cancelled, and the others claimed; fresh names the queues placed as new
// to the fleet.
func (r *reconciler) retarget(ctx context.Context, target, fresh map[string]bool, kind drover.StopKind) {
	r.target = target
	for q := range r.unconfigured {
		if !r.target[q] {
			delete(r.unconfigured, q)
			r.unfollow(q)
		}
	}
	for q := range r.owned {
		if !r.target[q] {
			r.stop(q, kind)
		}
	}
	for q, cancel := range r.claiming {
		if !r.target[q] {
			cancel()
		}
	}
	gained := make([]string, 0)
	for q := range r.target {
		if r.owned[q] == nil && r.claiming[q] == nil {
			gained = append(gained, q)
		}
	}
	sort.Strings(gained)
	for _, q := range gained {
		r.claimAs(ctx, q, fresh[q])
	}
}

// updateConfig hands an owned queue its changed configuration, and claims
// again an assigned queue released for want of one.
func (r *reconciler) updateConfig(ctx context.Context, e coordinator.QueueEntry) {
	if e.Err != nil {
		if !errors.Is(e.Err, drover.ErrQueueNotFound) {
			r.log.Warn("ignoring a corrupt queue config", "queue", e.Name, "error", e.Err)
		}
		return // a deleted queue leaves the assignment: the leader moves it
	}
	if r.unconfigured[e.Name] {
		delete(r.unconfigured, e.Name)
		if r.target[e.Name] && r.owned[e.Name] == nil && r.claiming[e.Name] == nil {
			r.claim(ctx, e.Name) // after the release in progress: claim waits for it
		}
		return
	}
	if r.owned[e.Name] == nil {
		if r.claiming[e.Name] != nil {
			// Changed after the claim read it, before the queue starts:
			// Start takes this newer one.
			r.claimCfgs[e.Name] = e.Config
		}
		return
	}
	sum, ok := digestConfig(e.Config)
	old, known := r.configSums[e.Name]
	if ok {
		r.configSums[e.Name] = sum
	} else {
		delete(r.configSums, e.Name)
	}
	if !ok || !known || old != sum {
		if err := r.cfg.Runner.Configure(e.Config); err != nil {
			r.log.Warn("configure queue", "queue", e.Name, "error", err)
		}
	}
}

// unfollow stops following the configuration of a queue given up.
func (r *reconciler) unfollow(q string) {
	delete(r.configSums, q)
	delete(r.claimCfgs, q)
	r.cfgWatch.Forget(q)
}

// stop begins to give an owned queue up: it joins the batch that the next
// flushStops hands to the runner (one goroutine per batch, not per queue:
// a rebalance that takes 10,000 queues away costs one).
func (r *reconciler) stop(q string, kind drover.StopKind) {
	c := r.owned[q]
	delete(r.owned, q)
	r.unfollow(q)
	if kind == drover.StopPlanned {
		r.handing[q] = true
	}
	r.stops = append(r.stops, r.newHandBack(q, c))
}

// flushStops hands the queues stop gathered to the runner, as one batch
// stopped as kind (every stop of the batch was asked as kind).
func (r *reconciler) flushStops(kind drover.StopKind) {
	r.handBack(r.stops, true, kind)
	r.stops = nil
}

// cutHandovers cuts every planned stop in progress to the drain timeout
// from now: the member is leaving or giving its queues up. A cut is a
// Runner.StopQueues with drover.StopLeave of those queues (the runner
// bounds the planned stops' wait by it); it blocks until they are
// released, as the planned stops it cuts do, so it runs in one goroutine
// beside theirs, and their release errors are those stops' to report.
func (r *reconciler) cutHandovers() {
	if len(r.handing) == 0 {
		return
	}
	qs := make([]string, 0, len(r.handing))
	for q := range r.handing {
		qs = append(qs, q)
	}
	clear(r.handing)
	r.pending += len(qs)
	go func() {
		unreported := make(map[string]bool, len(qs))
		for _, q := range qs {
			unreported[q] = true
		}
		r.cfg.Runner.StopQueues(r.untilLost, qs, drover.StopLeave, func(q string, _ error) {
			if unreported[q] {
				delete(unreported, q)
				r.events <- reconcileEvent{queue: q}
			}
		})
		for q := range unreported {
			r.events <- reconcileEvent{queue: q}
		}
	}()
}

// handBackItem is one queue of a hand-back: its claim (nil: none) and the
// channel closed when the hand-back is done (stopping).
type handBackItem struct {
	queue string
	claim Claim
	done  chan struct{}
}

// newHandBack registers a hand-back of q: a claim of q waits for it, and
// the run goroutine for its event.
func (r *reconciler) newHandBack(q string, c Claim) handBackItem {
	done := make(chan struct{})
	r.stopping[q] = done
	r.pending++
	return handBackItem{queue: q, claim: c, done: done}
}

// handBack gives claims up in one goroutine for the batch: through the
// runner (StopQueues: all stop at once, then drain and release) when it
// runs the queues, and in any case makes sure each owner node is gone
// before reporting that queue's stop. A release that failed while the
// session lives (a timeout under load, an outcome that stayed unknown)
// would otherwise leave the owner node behind, and the queue's next owner
// would wait for it forever. kind is the runner's stop.
//
// The batch reports its queues in the order the runner awaits them: a
// queue's report (and so this member's claim of it again, and the retry of
// a failed release) can wait for a slower queue before it in the batch.
// Its release does not: each queue's loop releases its own claim.
func (r *reconciler) handBack(items []handBackItem, viaRunner bool, kind drover.StopKind) {
	if len(items) == 0 {
		return
	}
	go func() {
		// Not ctx: a graceful leave still drains. A lost session cuts the
		// drain (the runner aborts the tasks when its ctx ends).
		ctx := r.untilLost
		finish := func(it handBackItem) {
			if it.claim != nil {
				r.ensureReleased(ctx, it.queue, it.claim)
			}
			close(it.done)
			r.events <- reconcileEvent{queue: it.queue, stopped: true}
		}
		if !viaRunner {
			for _, it := range items {
				finish(it)
			}
			return
		}
		byName := make(map[string]handBackItem, len(items))
		names := make([]string, len(items))
		for i, it := range items {
			byName[it.queue], names[i] = it, it.queue
		}
		r.cfg.Runner.StopQueues(ctx, names, kind, func(q string, err error) {
			it, ok := byName[q]
			if !ok {
				return
			}
			delete(byName, q)
			if err != nil {
				r.log.Warn("stop queue", "queue", q, "kind", kind, "error", err)
			}
			finish(it)
		})
		for _, it := range byName { // not reported by the runner
			finish(it)
		}
	}()
}

// ensureReleased retries until c no longer holds q's owner node: released,
// abandoned after a fence, or the session is lost (its ephemeral nodes go
// with it).
func (r *reconciler) ensureReleased(ctx context.Context, q string, c Claim) {
	for {
		err := c.Err()
		if err != nil && !errors.Is(err, drover.ErrFenced) {
			return // released
		}
		if err = c.Abandon(ctx); err == nil || r.s.Err() != nil {
			return
		}
		r.log.Warn("give up queue: release failed; retrying", "queue", q, "error", err)
		if !pause(ctx, r.s, claimRetry) {
			return
		}
	}
}

// claim claims q in a goroutine: after any stop of q in progress here, and
// after the previous owner released it, until it succeeds or is cancelled.
//
// At most maxClaimGoroutines run at once; the others wait in line (a member
// gaining 10,000 queues would otherwise hold 10,000 goroutines, while the
// session sends only maxClaimsInFlight claims at a time anyway). A waiting
// claim cancelled by a newer target just leaves the line.
func (r *reconciler) claim(ctx context.Context, q string) { r.claimAs(ctx, q, false) }

// claimAs is claim with the hint that q was placed as new to the fleet
// (coordinator.Owner.New).
func (r *reconciler) claimAs(ctx context.Context, q string, fresh bool) {
	if r.claimsRunning >= maxClaimGoroutines {
		if r.waitingSet == nil {
			r.waitingSet = map[string]bool{}
		}
		r.waiting = append(r.waiting, q)
		r.waitingSet[q] = fresh
		r.claiming[q] = func() {
			// Called on the run goroutine; nothing runs yet. The line
			// skips names no longer in the set.
			delete(r.claiming, q)
			delete(r.waitingSet, q)
		}
		return
	}
	r.claimsRunning++
	cctx, cancel := context.WithCancel(ctx)
	r.claiming[q] = cancel
	stopped := r.stopping[q]
	// A queue new to the fleet is almost always claimed at the first try:
	// its config is read beside the claim, not after it, a round trip less
	// before its first task. Only while few claims run: among a fleet's
	// first thousands the reads beside every claim were requests the
	// session's bound on claims did not hold back (docs/decisions.md,
	// "Issue 43: a million keys").
	earlyRead := r.claimsRunning <= maxEarlyReads
	owner := coordinator.Owner{Member: r.cfg.Member, MemberPath: r.cfg.MemberPath, Generation: r.gen, New: fresh}
	r.pending++
	go func() {
		var (
			got       Claim
			cfg       *drover.QueueConfig
			attempted bool // past any stop of q here: no other Claim of q exists
			// The config read beside the claim (earlyRead).
			early chan *drover.QueueConfig
		)
		if fresh && earlyRead {
			early = make(chan *drover.QueueConfig, 1)
			go func() { early <- r.readConfig(cctx, q) }()
		}
		defer func() {
			if early != nil && got == nil {
				<-early // ended with cctx; handle forgets the queue's config
			}
			if got == nil && attempted && r.s.Err() == nil {
				// A claim that timed out or was abandoned may still have
				// landed; the session applies requests in order, so this
				// later check sees it. Without a Claim it is an orphan.
				r.s.DropOwnOrphan(context.WithoutCancel(cctx), q)
			}
			r.events <- reconcileEvent{queue: q, claim: got, config: cfg, claimed: true}
		}()
		if stopped != nil {
			select {
			case <-stopped:
			case <-cctx.Done():
				return
			}
		}
		for cctx.Err() == nil {
			attempted = true
			c, err := r.s.Claim(cctx, q, owner)
			if err == nil {
				got = c
				if early != nil {
					cfg = <-early
				} else {
					cfg = r.readConfig(cctx, q)
				}
				return
			}
			if errors.Is(err, drover.ErrNotOwner) {
				// No Claim of q exists in this process while this goroutine
				// claims it, so an owner node of this very session is an
				// orphan (a claim whose reply was lost): drop it and retry.
				// A node the claim saw held by another session is no
				// orphan of ours: a request less per contended claim, the
				// sixth of a join's claims at 100 × 300,000.
				if !errors.Is(err, coordinator.ErrOwnedElsewhere) {
					if dropped, _ := r.s.DropOwnOrphan(cctx, q); dropped {
						continue
					}
				}
				if err := r.s.WaitReleased(cctx, q); err != nil && cctx.Err() == nil {
					r.log.Debug("wait for release", "queue", q, "error", err)
					pause(cctx, r.s, claimRetry)
				}
				continue
			}
			if r.s.Err() != nil || cctx.Err() != nil {
				return
			}
			r.log.Warn("claim failed; retrying", "queue", q, "error", err)
			pause(cctx, r.s, claimRetry)
		}
	}()
}

// readConfig reads q's configuration for a claim goroutine and follows it
// from now on, retrying transient errors until ctx ends or the session is
// lost. It returns nil when the queue is not configured (or its node is
// corrupt) or the read was abandoned.
func (r *reconciler) readConfig(ctx context.Context, q string) *drover.QueueConfig {
	for {
		e, err := r.cfgWatch.Read(ctx, q)
		switch {
		case err == nil && e.Err == nil:
			return &e.Config
		case err == nil:
			return nil
		case r.s.Err() != nil || ctx.Err() != nil:
			return nil
		}
		r.log.Warn("read queue config after claim; retrying", "queue", q, "error", err)
		pause(ctx, r.s, claimRetry)
	}
}

// compact rebuilds the per-queue maps that lost most of their entries
// (shrink.Map): a Go map keeps the table of its largest size, so a member
// that owned 50,000 queues during a churn and owns 10,000 after it kept
// six tables of 50,000 (docs/decisions.md, "Issue 40: an idle worker's
// memory after a churn"). It costs a length check per map, and a copy
// only after a map lost three quarters of its entries.
func (r *reconciler) compact() {
	r.target = shrink.Map(r.target, &r.peaks.target)
	r.owned = shrink.Map(r.owned, &r.peaks.owned)
	r.configSums = shrink.Map(r.configSums, &r.peaks.configSums)
	r.claiming = shrink.Map(r.claiming, &r.peaks.claiming)
	r.stopping = shrink.Map(r.stopping, &r.peaks.stopping)
	r.handing = shrink.Map(r.handing, &r.peaks.handing)
}

// handle takes a goroutine's report.
func (r *reconciler) handle(ctx context.Context, ev reconcileEvent) {
	r.pending--
	switch {
	case ev.stopped:
		if r.stopping[ev.queue] != nil {
			select {
			case <-r.stopping[ev.queue]:
				delete(r.stopping, ev.queue)
				delete(r.handing, ev.queue)
			default:
			}
		}
	case ev.claimed:
		// The goroutine has ended: release its context. Left uncancelled,
		// each finished claim stayed registered with the reconciler's
		// context until it ended — a context and a channel per queue ever
		// claimed (docs/decisions.md, "Issue 14: per-queue memory of an
		// idle worker").
		if cancel := r.claiming[ev.queue]; cancel != nil {
			cancel()
		}
		delete(r.claiming, ev.queue)
		r.claimsRunning--
		for len(r.waiting) > 0 && ctx.Err() == nil {
			next := r.waiting[0]
			r.waiting = r.waiting[1:]
			if fresh, ok := r.waitingSet[next]; ok {
				delete(r.waitingSet, next)
				delete(r.claiming, next)
				r.claimAs(ctx, next, fresh)
				break
			}
		}
		if ev.claim == nil {
			r.unfollow(ev.queue) // a config read beside the claim follows it
			if r.target[ev.queue] && ctx.Err() == nil && r.s.Err() == nil {
				r.claim(ctx, ev.queue) // cancelled by an older target, wanted again
			}
			return
		}
		if !r.target[ev.queue] {
			// The target moved on while we claimed: hand it back at once.
			r.unfollow(ev.queue)
			r.handBack([]handBackItem{r.newHandBack(ev.queue, ev.claim)}, false, drover.StopLeave)
			return
		}
		// A member that has just joined can win its claims before the
		// queues watch delivers its first list: then the configuration read
		// after the claim is used, never a default without task routes
		// (which would dead-letter every message as "no route").
		cfg, ok := r.claimCfgs[ev.queue]
		delete(r.claimCfgs, ev.queue)
		if !ok && ev.config != nil {
			cfg, ok = *ev.config, true
		}
		if !ok {
			// No configuration: the queue was removed (a family's retire,
			// `queue rm`) after the target that assigned it here. Run with
			// defaults, it has no task routes and would dead-letter every
			// message enqueued to it before the leader takes it away ("no
			// route"). It is released unused; its configuration stays
			// followed, and one that appears while it is still assigned
			// here (an enqueue registered it again) claims it again.
			r.log.Info("claimed queue has no configuration; released until it has one", "queue", ev.queue)
			r.unconfigured[ev.queue] = true
			r.handBack([]handBackItem{r.newHandBack(ev.queue, ev.claim)}, false, drover.StopLeave)
			return
		}
		if err := r.cfg.Runner.Start(cfg, ev.claim); err != nil {
			r.log.Error("start queue", "queue", ev.queue, "error", err)
			r.unfollow(ev.queue)
			r.handBack([]handBackItem{r.newHandBack(ev.queue, ev.claim)}, false, drover.StopLeave)
			return
		}
		r.owned[ev.queue] = ev.claim
		r.watchEnd(ev.queue, ev.claim)
		if sum, ok := digestConfig(cfg); ok {
			r.configSums[ev.queue] = sum
		}
	}
}

// watchEnd asks c, the claim the runner now holds for q, to report its end
// when it is fenced. A released claim (ErrNotOwner) is the runner's own
// graceful stop, and is not reported.
func (r *reconciler) watchEnd(q string, c Claim) {
	c.OnEnd(func() {
		if errors.Is(c.Err(), drover.ErrFenced) {
			r.ended.add(q, c)
		}
	})
}

// lost forgets the queues whose claims ended under the runner (a fenced
// commit or verification; ended: claim → queue), makes sure the runner has
// dropped them (Abort: all at once), hands the claims back and claims again
// the queues still assigned here. A report of a claim that is no longer the
// owned one (stopped meanwhile, or claimed again) is ignored.
func (r *reconciler) lost(ctx context.Context, ended map[Claim]string) {
	var (
		qs    []string
		items []handBackItem
	)
	for c, q := range ended {
		if r.owned[q] != c {
			continue
		}
		delete(r.owned, q)
		r.unfollow(q)
		qs = append(qs, q)
		items = append(items, r.newHandBack(q, c))
	}
	if len(qs) == 0 {
		return
	}
	r.cfg.Runner.Abort(qs...) // make sure they are gone; a no-op for those already
	r.handBack(items, false, drover.StopLeave)
	for _, q := range qs {
		if r.target[q] && r.claiming[q] == nil {
			r.claim(ctx, q) // after the hand-back: claim waits for it
		}
	}
}

// configSum identifies a queue configuration: the first 16 bytes of the
// SHA-256 of its JSON (struct fields in order, map keys sorted), so equal
// configurations have equal sums and different ones, for any practical
// purpose, do not.
type configSum [16]byte

// digestConfig returns qc's sum; ok is false when qc cannot be encoded (the
// caller then treats it as changed).
func digestConfig(qc drover.QueueConfig) (sum configSum, ok bool) {
	b, err := json.Marshal(qc)
	if err != nil {
		return sum, false
	}
	full := sha256.Sum256(b)
	copy(sum[:], full[:])
	return sum, true
}

// endedClaims collects the claims that ended under the runner, each with
// its queue. add never blocks; signal holds one wake-up however many claims
// wait in the set.
type endedClaims struct {
	mu     sync.Mutex
	claims map[Claim]string
	signal chan struct{}
}

func (e *endedClaims) add(q string, c Claim) {
	e.mu.Lock()
	if e.claims == nil {
		e.claims = map[Claim]string{}
	}
	e.claims[c] = q
	e.mu.Unlock()
	select {
	case e.signal <- struct{}{}:
	default: // a wake-up is pending: it takes every claim in the set
	}
}

// take empties the set, returning its claims and their queues.
func (e *endedClaims) take() map[Claim]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.claims
	e.claims = nil
	return out
}
