package registrar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/defaults"
	"github.com/drover-dev/drover/queue"
)

// The family registrar runs beside each rebalance leadership term. It
// registers the queues of a queue family at their first enqueue and
// retires those that stay empty and idle (docs/decisions.md, "Queue
// families (issue 31)"):
//
//   - every enqueue to a queue without an owner route publishes the
//     queue's name on the unowned channel; the registrar listens there,
//     keeps the names that match a family and are not registered, and
//     registers them with one batched CreateMany per Batch window: the
//     cost grows with new queues, never with idle ones;
//   - Pub/Sub is lossy, so a slow SCAN of the queues holding messages
//     (ScanCount keys every ScanEvery) finds a queue whose wake-up was
//     lost;
//   - a sweep retires the queues of families with retire_after that are
//     empty and idle, up to maxRetiresPerStep a step (every SweepEvery),
//     on a goroutine of its own. It checks the queues of the retire index
//     whose time is retire_after old (the trims note each queue whose log
//     they empty: queue.Families.RetireCandidates), and, as a backstop
//     for queues the index does not hold (emptied before it existed, on a
//     Redis Cluster, a delayed message revoked), SweepCount registered
//     queues in turn (docs/decisions.md, "Issue 40: the retire sweep
//     visits the emptied queues")
//     (retire.go): their Redis keys and queue registry SET
//     entries are deleted only if each queue is still empty (one script
//     each, all in one pipeline; see queue.Families.RetireMany for a Redis
//     Cluster), then their registry entries (a few packed multis), then
//     the queues are looked at again and registered anew if a message came
//     in between. An enqueue after the script finds no route and wakes the
//     registrar, which registers the queue again and lists it in the Redis
//     SET again (AddQueueNames): a retired queue is listed nowhere
//     (docs/decisions.md, "Issue 40: retired keys leave no ghosts"), one
//     enqueued to again everywhere.

// Registrar defaults.
const (
	DefaultBatch      = 50 * time.Millisecond
	DefaultScanEvery  = time.Second
	DefaultScanCount  = 1000
	DefaultSweepEvery = time.Second
	// DefaultSweepCount is the backstop's pace: the sweep finds the queues
	// trims emptied in the retire index, and walks the registry only for
	// those the index does not hold (queues emptied before the index
	// existed, every queue on a Redis Cluster, a delayed message revoked);
	// 2,000 a second, the walk's pace before the index. The index alone
	// once retired 32 keys a second in the full churn bench: the cause was
	// not the index but the registrations failing the sweep's packed
	// multis, and the offset drops at each step's end (docs/decisions.md,
	// "Issue 40: the registry's writers take turns"). The walk keeps its
	// pace until a run shows the index carrying retirement alone.
	DefaultSweepCount = 2000
	// maxRetiresPerStep bounds the queues one sweep step retires; the
	// others are found idle again by the next pass. A step's retirement is
	// batched (a pipeline of scripts, a few packed multis, a pipeline of
	// looks: about 0.3 s for 1,000 against local servers, docs/decisions.md
	// "Issue 40: retirement is batched") and runs off the loop, so the
	// bound is what a step may cost, not what the loop may wait: twice
	// the 1,000 a second a churning family retires, so that a step that
	// finds a backlog catches up, and one step's multis stay a few (a
	// step's queues are at most what it looks at, SweepCount).
	maxRetiresPerStep = 2000
	// pendingFor is how long a name sent to CreateMany counts as
	// registered while the registry snapshot does not list it yet.
	pendingFor = time.Minute
)

// Registry is what the registrar needs of the coordination service: three
// roles of a *coordinator.Session, each taken as the session has it
// (ZooKeeper), so that no type forwards to them and a test fakes only the
// role it needs.
type Registry struct {
	Queues   QueueRegistry // coordinator.Queues
	Families FamilySource  // coordinator.Families
	Offsets  OffsetDropper // coordinator.Claims
}

// ZooKeeper is the Registry of a coordinator session.
func ZooKeeper(s *coordinator.Session) Registry {
	return Registry{Queues: s.Queues(), Families: s.Families(), Offsets: s.Claims()}
}

// QueueRegistry registers and retires queues (coordinator.Queues).
type QueueRegistry interface {
	// CreateMany registers queues in batches; existing ones are kept.
	CreateMany(ctx context.Context, cfgs []drover.QueueConfig) (int, error)
	// RetireMany removes queues of families from the registry where
	// empty says so, in a few multis (see coordinator.Queues.RetireMany).
	RetireMany(ctx context.Context, cands []coordinator.RetireCandidate, empty func(context.Context, []coordinator.RetireCandidate) ([]bool, error)) ([]bool, error)
}

// FamilySource reads the families (coordinator.Families).
type FamilySource interface {
	// Watch delivers every family now and after each change.
	Watch(ctx context.Context) <-chan drover.Families
	// Get reads one family (drover.ErrFamilyNotFound when gone).
	Get(ctx context.Context, name string) (coordinator.FamilyEntry, error)
	// Reapply gives queues registered with cfgs the family's
	// configuration where they still hold the one registered (see
	// coordinator.Families.Reapply).
	Reapply(ctx context.Context, f drover.FamilyConfig, cfgs []drover.QueueConfig) (updated, kept int, err error)
}

// OffsetDropper deletes the offsets of retired queues (coordinator.Claims).
type OffsetDropper interface {
	// DropOffset deletes a retired queue's offset node once unowned;
	// false: still owned, try later.
	DropOffset(ctx context.Context, queue string) (bool, error)
}

// FamilyRedis is what the registrar needs of Redis (*queue.Store).
type FamilyRedis interface {
	UnownedWakeups(ctx context.Context) (<-chan queue.Wakeup, error)
	ScanQueuesWithMessages(ctx context.Context, cursor uint64, count int64) (queue.ScanStep, error)
	CheckIdle(ctx context.Context, queues []string, cutoff time.Time) ([]queue.QueueIdleness, error)
	// RetireCandidates returns up to n queues of the retire index emptied
	// at or before before, oldest first (none on a Redis Cluster).
	RetireCandidates(ctx context.Context, before time.Time, n int) ([]queue.EmptiedQueue, error)
	// TidyRetireIndex drops entries of the retire index and postpones
	// others (see queue.Families.TidyRetireIndex).
	TidyRetireIndex(ctx context.Context, drop []string, later []queue.EmptiedQueue) error
	// RetireMany retires the queues still empty and idle since cutoff, in
	// one pipeline (see queue.Families.RetireMany).
	RetireMany(ctx context.Context, queues []string, cutoff time.Time) ([]queue.QueueIdleness, error)
	// HasMessagesMany looks at queues for messages, in one pipeline; true
	// where the look failed.
	HasMessagesMany(ctx context.Context, queues []string) ([]bool, error)
	// AddQueueNames lists queues in the queue registry SET again (a
	// retired queue's entry is gone; its producer may not add it back).
	AddQueueNames(ctx context.Context, queues []string) error
}

var (
	_ FamilyRedis   = queue.Families{}
	_ QueueRegistry = coordinator.Queues{}
	_ FamilySource  = coordinator.Families{}
	_ OffsetDropper = coordinator.Claims{}
)

// Config configures a Registrar. Zero values mean the documented
// defaults.
type Config struct {
	Registry Registry    // required: every role
	Redis    FamilyRedis // required
	// Batch is how long new names are gathered before one CreateMany.
	// Default 50ms.
	Batch time.Duration
	// ScanEvery and ScanCount pace the backstop scan: about ScanCount
	// Redis keys examined every ScanEvery. Defaults 1s and 1000.
	ScanEvery time.Duration
	ScanCount int64
	// SweepEvery and SweepCount pace the retire sweep: a step every
	// SweepEvery checks the retire index's due queues and, as a backstop,
	// SweepCount registered queues in turn (at most maxRetiresPerStep,
	// 2,000, retired a step). Defaults 1s and 500.
	SweepEvery time.Duration
	SweepCount int
	// Clock is the registrar's time: idle times are measured by it, and
	// every wait runs on it (the flush, the scan, the sweep, the backoff of
	// the wake-ups' subscription). Default drover.SystemClock.
	Clock drover.TimerClock
	// OnRegistered, if set, is called after each CreateMany with the
	// queues sent and how many were created.
	OnRegistered func(sent, created int)
	// OnReady, if set, is called when a term has subscribed to the
	// wake-ups and read the families: an enqueue from then on is heard.
	OnReady func()
	// OnRetired, if set, is called after each queue retired, on the
	// registrar's loop.
	OnRetired func(queue, family string)
	Logger    hclog.Logger
}

// Registrar registers and retires the queues of families while its owner
// leads the rebalance. Observe feeds it the registry snapshots the leader
// reads; Run runs one term.
type Registrar struct {
	cfg Config
	log hclog.Logger

	mu     sync.Mutex
	latest *coordinator.Registry
	notify chan struct{}
	// The queues this term's CreateMany created, for the leader to
	// place at once (fleet/placement.go), ahead of the registry watch.
	created      []drover.QueueConfig
	createdReady chan struct{}
}

// New validates cfg.
func New(cfg Config) (*Registrar, error) {
	if r := cfg.Registry; r.Queues == nil || r.Families == nil || r.Offsets == nil || cfg.Redis == nil {
		return nil, fmt.Errorf("registrar: %w: Registry (Queues, Families, Offsets) and Redis are required", drover.ErrInvalidConfig)
	}
	cfg.Batch = defaults.Positive(cfg.Batch, DefaultBatch)
	cfg.ScanEvery = defaults.Positive(cfg.ScanEvery, DefaultScanEvery)
	cfg.ScanCount = defaults.Positive(cfg.ScanCount, DefaultScanCount)
	cfg.SweepEvery = defaults.Positive(cfg.SweepEvery, DefaultSweepEvery)
	cfg.SweepCount = defaults.Positive(cfg.SweepCount, DefaultSweepCount)
	if cfg.Clock == nil {
		cfg.Clock = drover.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Registrar{cfg: cfg, log: cfg.Logger, notify: make(chan struct{}, 1), createdReady: make(chan struct{}, 1)}, nil
}

// Observe hands the registrar the latest registry snapshot. It never
// blocks.
func (r *Registrar) Observe(reg coordinator.Registry) {
	r.mu.Lock()
	r.latest = &reg
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default: // one pending notice covers this snapshot: latest is read
	}
}

// handOver gives the leader queues just created. It never blocks.
func (r *Registrar) handOver(cfgs []drover.QueueConfig) {
	r.mu.Lock()
	r.created = append(r.created, cfgs...)
	r.mu.Unlock()
	select {
	case r.createdReady <- struct{}{}:
	default: // a notice is pending: it takes these too
	}
}

// Created receives a notice when queues were created: TakeCreated has
// them, for the rebalance leader to place at once (fleet's placement),
// ahead of the registry watch.
func (r *Registrar) Created() <-chan struct{} { return r.createdReady }

// TakeCreated returns the queues created since the last call.
func (r *Registrar) TakeCreated() []drover.QueueConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.created
	r.created = nil
	return out
}

// term is the state of one Run.
type term struct {
	*Registrar
	fams    drover.Families
	reg     coordinator.Registry
	haveReg bool
	batch   map[string]drover.QueueConfig // to register at the next flush
	sending map[string]bool               // in the CreateMany running now
	pending map[string]time.Time          // sent to CreateMany, not listed yet
	retired map[string]bool               // retired; listed by a stale snapshot
	offsets []string                      // retired, offset node to drop
	// retiring: the candidates of the sweep step running now; woken:
	// those of them whose wake-up was heard meanwhile (afterSweep).
	retiring map[string]bool
	woken    map[string]bool
	scan     uint64 // the backstop scan's cursor
	// catchingUp: a wake-up was lost; the scan runs a whole pass, from
	// its start, at the batch pace. missedAgain: another was lost during
	// that pass; a second whole pass follows it.
	catchingUp, missedAgain bool
	sweep                   int       // the retire sweep's next bucket
	passStart               time.Time // when the backstop's walk last started a pass
}

// Run registers and retires family queues until ctx ends (the leadership
// term is over), and returns ctx's error. A failed subscription to the
// wake-ups (Redis away) is retried with backoff.
func (r *Registrar) Run(ctx context.Context) error {
	defer func() {
		// The next term's registry watch delivers its own snapshot; one
		// of this term's must not stand for it. (Cleared here, at the end,
		// not at the start: the term's first snapshot may be observed
		// before Run gets going.)
		r.mu.Lock()
		r.latest, r.created = nil, nil
		r.mu.Unlock()
	}()
	var wakeups <-chan queue.Wakeup
	for retry := 100 * time.Millisecond; ; retry = min(2*retry, 5*time.Second) {
		var err error
		if wakeups, err = r.cfg.Redis.UnownedWakeups(ctx); err == nil {
			break
		}
		r.log.Warn("registrar cannot subscribe to the unowned wake-ups; retrying", "error", err, "in", retry)
		backoff := r.cfg.Clock.NewTimer(retry)
		select {
		case <-backoff.C():
		case <-ctx.Done():
			backoff.Stop()
			return ctx.Err()
		}
	}
	t := &term{Registrar: r, batch: map[string]drover.QueueConfig{}, sending: map[string]bool{}, pending: map[string]time.Time{},
		retired: map[string]bool{}, retiring: map[string]bool{}, woken: map[string]bool{}}
	fams := r.cfg.Registry.Families.Watch(ctx)
	// Wake-ups wait (in the subscription's buffer) until the families are
	// known: matched against none, they would be dropped.
	select {
	case fs, ok := <-fams:
		if !ok {
			return ctx.Err()
		}
		t.fams = fs
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.cfg.OnReady != nil {
		r.cfg.OnReady()
	}
	t.takeSnapshot() // one observed before Run got going, if any
	clock := r.cfg.Clock
	flush := clock.NewTimer(time.Hour)
	flush.Stop()
	defer flush.Stop()
	// One CreateMany at a time runs on its own goroutine, so that the
	// loop keeps draining the wake-ups meanwhile (a registration of a
	// thousand queues takes a second or more, and the subscription's
	// buffer holds 1,024): names that come in the meantime make the next
	// batch bigger.
	flushing := false // the timer runs, or a CreateMany does
	registered := make(chan registration, 1)
	defer func() {
		if flushing {
			select {
			case <-registered:
			case <-flush.C():
			}
		}
	}()
	// One sweep step at a time runs on its own goroutine, for the same
	// reason (retire.go).
	sweeping := false
	swept := make(chan retirement, 1)
	defer func() {
		if sweeping {
			<-swept
		}
	}()
	startSweep := func() {
		if job, ok := t.sweepStep(ctx); ok {
			sweeping = true
			go func() { swept <- t.runSweep(ctx, job) }()
		}
	}
	// The offset nodes of retired queues go on a goroutine of their own,
	// one batch at a time, beside the sweep steps.
	dropping := false
	dropped := make(chan []string, 1)
	defer func() {
		if dropping {
			<-dropped
		}
	}()
	// Timers, reset after each firing: the clock has no tickers.
	scan := clock.NewTimer(r.cfg.ScanEvery)
	defer scan.Stop()
	catchUp := clock.NewTimer(r.cfg.Batch)
	catchUp.Stop()
	defer catchUp.Stop()
	sweep := clock.NewTimer(r.cfg.SweepEvery)
	defer sweep.Stop()
	// batchSince is when the batch waiting got its first queue: it is
	// sent Batch after that, or as soon as the registration in flight
	// ends if that is later. (Timed from the end of the previous
	// registration, a queue that came during a registration of 300 ms
	// waited that, then a whole Batch more.)
	var batchSince time.Time
	queued := func() {
		if len(t.batch) == 0 {
			return
		}
		now := clock.Now()
		if batchSince.IsZero() {
			batchSince = now
		}
		if !flushing {
			flushing = true
			flush.Reset(max(r.cfg.Batch-now.Sub(batchSince), 0))
		}
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case fs, ok := <-fams:
			if !ok {
				return ctx.Err()
			}
			t.fams = fs
		case <-r.notify:
			t.takeSnapshot()
		case w, ok := <-wakeups:
			if !ok {
				return ctx.Err()
			}
			if w.Missed {
				// The lost ones may be new queues: scan a whole pass at the
				// batch pace, not at the backstop's. From the start: the
				// backstop's pass may have walked their keys already (a
				// pass from its cursor on missed them until the next slow
				// pass, ~20 s at a smoke bench's keyspace).
				if !t.catchingUp {
					t.catchingUp, t.scan = true, 0
					catchUp.Reset(r.cfg.Batch)
				} else {
					t.missedAgain = true
				}
			} else {
				t.consider(w.Queue)
			}
			queued()
		case <-flush.C():
			cfgs := t.takeBatch()
			batchSince = time.Time{}
			go func() {
				start := clock.Now()
				created, err := t.cfg.Registry.Queues.CreateMany(ctx, cfgs)
				took := clock.Now().Sub(start)
				if err == nil && created == len(cfgs) {
					// Every one new, so registered with the family's
					// configuration: the leader may place them before its
					// registry watch lists them, and before the checks
					// below (a ZooKeeper read and a Redis write, which new
					// keys need not wait for).
					t.handOver(cfgs)
				}
				if err == nil {
					t.catchUpFamilies(ctx, cfgs)
					t.addQueueNames(ctx, cfgs)
				}
				registered <- registration{cfgs, created, err, took}
			}()
		case reg := <-registered:
			flushing = false
			t.afterRegister(ctx, reg)
			queued()
		case <-scan.C():
			scan.Reset(r.cfg.ScanEvery)
			t.scanStep(ctx)
			queued()
		case <-catchUp.C():
			if t.scanStep(ctx) && t.scan == 0 && !t.missedAgain {
				t.catchingUp = false
			} else {
				if t.scan == 0 {
					t.missedAgain = false // a whole pass from here covers it
				}
				catchUp.Reset(r.cfg.Batch)
			}
			queued()
		case <-sweep.C():
			sweep.Reset(r.cfg.SweepEvery)
			if !dropping && len(t.offsets) > 0 {
				if offs := t.takeOffsets(); len(offs) > 0 {
					dropping = true
					go func() { dropped <- t.dropOffsets(ctx, offs) }()
				}
			}
			if !sweeping { // one step at a time: the next tick after it ends
				startSweep()
			}
		case res := <-swept:
			sweeping = false
			t.afterSweep(res)
			queued()
			// A full page of the retire index: more queues are due now.
			// The next step starts at once rather than at the next tick
			// (a step of 2,000 taking a little over a second waited for
			// the tick after it, so retirement could not pass 1,000 a
			// second, what a churning family asks).
			if res.fromIndex >= maxRetiresPerStep {
				startSweep()
			}
		case rest := <-dropped:
			dropping = false
			t.offsets = append(t.offsets, rest...)
		}
	}
}

// takeSnapshot reads the latest registry and forgets what it settles.
func (t *term) takeSnapshot() {
	t.mu.Lock()
	if t.latest != nil {
		t.reg, t.haveReg = *t.latest, true
	}
	t.mu.Unlock()
	t.settlePending()
	for q := range t.retired {
		if !t.reg.Has(q) {
			delete(t.retired, q)
		}
	}
}

// settlePending forgets the names sent to CreateMany that the registry
// snapshot lists, or that were sent more than pendingFor ago.
func (t *term) settlePending() {
	now := t.cfg.Clock.Now()
	for q, at := range t.pending {
		if t.reg.Has(q) || now.Sub(at) > pendingFor {
			delete(t.pending, q)
		}
	}
}

// registered reports whether q is registered, as far as the term knows.
func (t *term) registered(q string) bool {
	if _, ok := t.pending[q]; ok {
		return true
	}
	return t.reg.Has(q) && !t.retired[q]
}

// consider adds q to the batch when it matches a family and is not
// registered. Before the first registry snapshot every match is sent
// (CreateMany keeps existing queues).
func (t *term) consider(q string) {
	if _, ok := t.batch[q]; ok || t.sending[q] || drover.ValidateQueueName(q) != nil {
		return
	}
	if t.retiring[q] {
		t.woken[q] = true // the sweep step may retire it: afterSweep decides
		return
	}
	f, ok := t.fams.Match(q)
	if !ok || t.registered(q) {
		return
	}
	t.batch[q] = f.QueueFor(q)
}

// registration is the outcome of one CreateMany.
type registration struct {
	cfgs    []drover.QueueConfig
	created int
	err     error
	took    time.Duration
}

// takeBatch empties the batch into a slice for CreateMany.
func (t *term) takeBatch() []drover.QueueConfig {
	cfgs := make([]drover.QueueConfig, 0, len(t.batch))
	for _, c := range t.batch {
		cfgs = append(cfgs, c)
		t.sending[c.Name] = true
	}
	t.batch = map[string]drover.QueueConfig{} // a cleared map keeps the size of a burst
	return cfgs
}

// afterRegister takes the outcome of a CreateMany: the names count as
// registered until the registry snapshot lists them; on failure they go
// back into the batch for the next one.
func (t *term) afterRegister(ctx context.Context, reg registration) {
	t.sending = map[string]bool{}
	if reg.err != nil {
		if ctx.Err() == nil {
			t.log.Warn("registering family queues failed; retrying", "queues", len(reg.cfgs), "error", reg.err)
		}
		for _, c := range reg.cfgs {
			if _, ok := t.batch[c.Name]; !ok {
				t.batch[c.Name] = c
			}
		}
		return
	}
	now := t.cfg.Clock.Now()
	for _, c := range reg.cfgs {
		// The snapshot may list it already (the registry watch can deliver
		// before this outcome arrives): then no later snapshot would
		// settle it, and the sweep would pass it over as pending.
		if !t.reg.Has(c.Name) || t.retired[c.Name] {
			t.pending[c.Name] = now
		}
		delete(t.retired, c.Name)
	}
	t.log.Debug("registered family queues", "sent", len(reg.cfgs), "created", reg.created, "took", reg.took)
	// The queues went to the leader as CreateMany returned when every one
	// was new, so registered with the family's configuration; when some
	// existed, the registry watch says with what weight and tags.
	if t.cfg.OnRegistered != nil {
		t.cfg.OnRegistered(len(reg.cfgs), reg.created)
	}
}

// scanStep takes one step of the backstop scan and reports whether it
// did.
func (t *term) scanStep(ctx context.Context) bool {
	if len(t.fams) == 0 || !t.haveReg {
		return false
	}
	step, err := t.cfg.Redis.ScanQueuesWithMessages(ctx, t.scan, t.cfg.ScanCount)
	if err != nil {
		if ctx.Err() == nil {
			t.log.Warn("backstop scan for family queues failed", "error", err)
		}
		return false
	}
	t.scan = step.Cursor
	for _, q := range step.Queues {
		t.consider(q)
	}
	return true
}

// catchUpFamilies brings queues just registered (cfgs) up to a change of
// their family that the registrar had not seen when it rendered them: the
// family watch lags, and ChangeFamily may have walked the registry before
// these queues were in it. Each family of the batch is read once after
// the registration: ZooKeeper answers a session's read after its own
// write, so a change committed before the registration is seen here, and
// one committed after it found the queues registered (docs/decisions.md,
// "A family's change reaches its queues"). A queue whose config differs
// from what the family says now is reapplied, version-checked. One read
// per family per batch; failures are logged (the queue keeps a config the
// family had a moment ago, and the next change of the family reaches it
// only if it is still that config).
func (t *term) catchUpFamilies(ctx context.Context, cfgs []drover.QueueConfig) {
	byFamily := map[string][]drover.QueueConfig{}
	for _, c := range cfgs {
		byFamily[c.Family] = append(byFamily[c.Family], c)
	}
	for name, cs := range byFamily {
		e, err := t.cfg.Registry.Families.Get(ctx, name)
		if err != nil {
			if !errors.Is(err, drover.ErrFamilyNotFound) && ctx.Err() == nil {
				t.log.Warn("reading a family after registering its queues failed", "family", name, "error", err)
			}
			continue
		}
		var stale []drover.QueueConfig
		for _, c := range cs {
			if !sameConfig(c, e.Config.QueueFor(c.Name)) {
				stale = append(stale, c)
			}
		}
		if len(stale) == 0 {
			continue
		}
		updated, kept, err := t.cfg.Registry.Families.Reapply(ctx, e.Config, stale)
		if err != nil && ctx.Err() == nil {
			t.log.Warn("bringing queues registered from a family's previous configuration up to date failed", "family", name, "queues", len(stale), "error", err)
			continue
		}
		t.log.Info("queues registered from a family's previous configuration brought up to date", "family", name, "updated", updated, "kept", kept)
	}
}

// addQueueNames lists queues just registered in the Redis queue registry
// SET, where a queue retired before is no longer (queue.Families.Retire):
// its producer adds it only on its first enqueue to it, and may have made
// that one before the retire. A failure is logged: the queue is listed
// anyway, being registered (ops.ListQueueNames).
func (t *term) addQueueNames(ctx context.Context, cfgs []drover.QueueConfig) {
	names := make([]string, len(cfgs))
	for i, c := range cfgs {
		names[i] = c.Name
	}
	if err := t.cfg.Redis.AddQueueNames(ctx, names); err != nil && ctx.Err() == nil {
		t.log.Warn("listing registered family queues in Redis failed", "queues", len(names), "error", err)
	}
}

// sameConfig reports whether a and b encode alike.
func sameConfig(a, b drover.QueueConfig) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}
