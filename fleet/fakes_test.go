package fleet

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
)

// fakeSession is an in-memory coordination session: owner nodes, an
// assignment feed and a session end, with no server.
type fakeSession struct {
	assignments chan coordinator.AssignmentNode
	lost        chan struct{}
	lostOnce    sync.Once

	mu       sync.Mutex
	owners   map[string]*fakeClaim      // queue → the claim holding its owner node
	released chan struct{}              // closed and replaced at every release
	claims   map[string]int             // successful claims per queue
	fresh    map[string]bool            // the Owner.New hint of each queue's last claim
	ctxs     map[string]context.Context // the context of the last successful Claim per queue
	blocked  map[string]bool            // queues another session owns
	// WaitReleased calls in progress, and the most at once.
	waiters, maxWaiters int
	orphanChecks        int              // DropOwnOrphan calls
	cfgWatch            *fakeConfigWatch // the reconciler's, once it asked
}

func newFakeSession() *fakeSession {
	return &fakeSession{
		assignments: make(chan coordinator.AssignmentNode, 16), lost: make(chan struct{}),
		owners: map[string]*fakeClaim{}, released: make(chan struct{}), claims: map[string]int{}, blocked: map[string]bool{},
	}
}

var _ ReconcilerSession = (*fakeSession)(nil)

func (s *fakeSession) Done() <-chan struct{} { return s.lost }
func (s *fakeSession) Err() error {
	select {
	case <-s.lost:
		return fmt.Errorf("fake: %w", drover.ErrSessionLost)
	default:
		return nil
	}
}

// lose ends the session.
func (s *fakeSession) lose() { s.lostOnce.Do(func() { close(s.lost) }) }

// assign publishes an assignment of generation gen: queue → member.
func (s *fakeSession) assign(gen int64, queues map[string]string) {
	s.assignments <- coordinator.AssignmentNode{Assignment: drover.Assignment{Generation: gen, Queues: queues}}
}

// WatchShare delivers every assignment whole: the reconciler keeps only its
// member's queues.
func (s *fakeSession) WatchShare(ctx context.Context, _ string) <-chan coordinator.AssignmentNode {
	return relay(ctx, s.assignments)
}

func (s *fakeSession) WatchQueueConfigs(ctx context.Context) ConfigWatch {
	w := &fakeConfigWatch{out: make(chan coordinator.QueueEntry)}
	s.mu.Lock()
	s.cfgWatch = w
	s.mu.Unlock()
	go func() { <-ctx.Done(); close(w.out) }()
	return w
}

// fakeConfigWatch reads every queue as configured with concurrency 3,
// but those a test marks missing, and delivers the changes a test sends
// on out.
type fakeConfigWatch struct {
	out     chan coordinator.QueueEntry
	mu      sync.Mutex
	missing map[string]bool
}

// setMissing makes q read as not configured (missing true) or configured.
func (w *fakeConfigWatch) setMissing(q string, missing bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.missing == nil {
		w.missing = map[string]bool{}
	}
	w.missing[q] = missing
}

func (w *fakeConfigWatch) Read(_ context.Context, name string) (coordinator.QueueEntry, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.missing[name] {
		return coordinator.QueueEntry{Name: name, Err: fmt.Errorf("queue %s: %w", name, drover.ErrQueueNotFound)}, nil
	}
	return coordinator.QueueEntry{Name: name, Config: drover.QueueConfig{Name: name, Concurrency: 3}}, nil
}
func (w *fakeConfigWatch) Forget(string)                          {}
func (w *fakeConfigWatch) Changes() <-chan coordinator.QueueEntry { return w.out }

func (s *fakeSession) Claim(ctx context.Context, q string, o coordinator.Owner) (Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.Err(); err != nil {
		return nil, err
	}
	if s.fresh == nil {
		s.fresh = map[string]bool{}
	}
	s.fresh[q] = o.New
	if s.blocked[q] {
		return nil, fmt.Errorf("claim %s: %w: %w", q, drover.ErrNotOwner, coordinator.ErrOwnedElsewhere)
	}
	if s.owners[q] != nil {
		return nil, fmt.Errorf("claim %s: %w", q, drover.ErrNotOwner)
	}
	c := &fakeClaim{s: s, queue: q, done: make(chan struct{})}
	s.owners[q] = c
	s.claims[q]++
	if s.ctxs == nil {
		s.ctxs = map[string]context.Context{}
	}
	s.ctxs[q] = ctx
	return c, nil
}

// claimCtx is the context the last successful Claim of q was given.
func (s *fakeSession) claimCtx(q string) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctxs[q]
}

func (s *fakeSession) WaitReleased(ctx context.Context, q string) error {
	s.mu.Lock()
	s.waiters++
	s.maxWaiters = max(s.maxWaiters, s.waiters)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.waiters--
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		free := s.owners[q] == nil && !s.blocked[q]
		ch := s.released
		s.mu.Unlock()
		if free {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.lost:
			return s.Err()
		}
	}
}

func (s *fakeSession) DropOwnOrphan(context.Context, string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.orphanChecks++
	return false, nil
}

// unblock releases a queue another session owned.
func (s *fakeSession) unblock(q string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.blocked, q)
	s.notifyLocked()
}

func (s *fakeSession) notifyLocked() {
	close(s.released)
	s.released = make(chan struct{})
}

// claimCount returns how many times q was claimed.
func (s *fakeSession) claimCount(q string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claims[q]
}

// owner returns the claim holding q's owner node.
func (s *fakeSession) owner(q string) *fakeClaim {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owners[q]
}

// fakeClaim is an owner node of a fakeSession.
type fakeClaim struct {
	s     *fakeSession
	queue string
	done  chan struct{}

	mu      sync.Mutex
	offset  drover.Offset
	ended   error
	fenceOn bool   // the next write is refused
	onEnd   func() // OnEnd's callback, not called yet
	ends    int    // callbacks called
}

func (c *fakeClaim) Offset() drover.Offset { c.mu.Lock(); defer c.mu.Unlock(); return c.offset }
func (c *fakeClaim) Done() <-chan struct{} { return c.done }
func (c *fakeClaim) Err() error            { c.mu.Lock(); defer c.mu.Unlock(); return c.ended }

// fence makes the next write fail as fenced (an operator reset the offset).
func (c *fakeClaim) fence() { c.mu.Lock(); c.fenceOn = true; c.mu.Unlock() }

func (c *fakeClaim) endLocked(err error) {
	if c.ended == nil {
		c.ended = err
		close(c.done)
		if f := c.onEnd; f != nil {
			c.onEnd = nil
			c.ends++
			go f()
		}
	}
}

// OnEnd calls f once, in its own goroutine, when the claim ends, as the
// coordinator's claim does.
func (c *fakeClaim) OnEnd(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended == nil {
		c.onEnd = f
		return
	}
	c.ends++
	go f()
}

// endReports returns how many OnEnd callbacks were called.
func (c *fakeClaim) endReports() int { c.mu.Lock(); defer c.mu.Unlock(); return c.ends }

func (c *fakeClaim) write(off drover.Offset, release bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended != nil {
		return c.ended
	}
	if c.fenceOn {
		c.endLocked(fmt.Errorf("fake %s: %w", c.queue, drover.ErrFenced))
		return c.ended
	}
	c.offset = off
	if release {
		c.endLocked(fmt.Errorf("fake %s released: %w", c.queue, drover.ErrNotOwner))
		c.s.freeOwner(c)
	}
	return nil
}

func (c *fakeClaim) Commit(_ context.Context, off drover.Offset) error  { return c.write(off, false) }
func (c *fakeClaim) Release(_ context.Context, off drover.Offset) error { return c.write(off, true) }

func (c *fakeClaim) Abandon(context.Context) error {
	c.mu.Lock()
	c.endLocked(fmt.Errorf("fake %s abandoned: %w", c.queue, drover.ErrNotOwner))
	c.mu.Unlock()
	c.s.freeOwner(c)
	return nil
}

func (s *fakeSession) freeOwner(c *fakeClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owners[c.queue] == c {
		delete(s.owners, c.queue)
		s.notifyLocked()
	}
}

// fakeRunner records what the reconciler asks of the worker. Stop releases
// the claim, as the worker does after draining.
type fakeRunner struct {
	mu         sync.Mutex
	running    map[string]drover.Claim
	starts     map[string]int
	stops      map[string]int
	aborts     map[string]int
	configs    map[string]drover.QueueConfig
	configures map[string]int
	startErr   error
	// drain, when set, makes Stop wait for it to close (in-flight tasks
	// draining) or for Stop's ctx to end; drainsCut counts the drains
	// that ended by ctx (the tasks were aborted).
	drain     chan struct{}
	drainsCut map[string]int
	// kinds lists the kind of every Stop call per queue. A StopLeave of a
	// queue whose planned Stop waits (handing) cuts that wait, as the
	// worker's drain timeout would, and is counted in handoversCut.
	kinds        map[string][]drover.StopKind
	handing      map[string]chan struct{}
	handoversCut map[string]int
	// last is the claim of each queue's last Start; overlaps counts the
	// Starts made while that claim still held (two loops of one queue).
	last     map[string]drover.Claim
	overlaps int
	// abortGate, when set, makes Abort wait for it to close after telling
	// its queues (the aborted loops' tasks dying); abortsBegun counts the
	// queues Abort has told.
	abortGate   chan struct{}
	abortsBegun int
}

func newFakeRunner() *fakeRunner {
	return &fakeRunner{running: map[string]drover.Claim{}, starts: map[string]int{}, stops: map[string]int{},
		aborts: map[string]int{}, configs: map[string]drover.QueueConfig{}, configures: map[string]int{}, drainsCut: map[string]int{},
		kinds: map[string][]drover.StopKind{}, handing: map[string]chan struct{}{}, handoversCut: map[string]int{},
		last: map[string]drover.Claim{}}
}

func (r *fakeRunner) Start(qc drover.QueueConfig, c drover.Claim) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.startErr != nil {
		return r.startErr
	}
	if r.running[qc.Name] != nil {
		return fmt.Errorf("start queue %s: already running", qc.Name)
	}
	if prev := r.last[qc.Name]; prev != nil && prev.Err() == nil {
		r.overlaps++
	}
	r.last[qc.Name] = c
	r.running[qc.Name] = c
	r.starts[qc.Name]++
	r.configs[qc.Name] = qc
	return nil
}

// StopQueues stops every queue first (stopBegin), then waits for each in
// turn (its drain), as the worker does.
func (r *fakeRunner) StopQueues(ctx context.Context, qs []string, kind drover.StopKind, stopped func(string, error)) {
	waits := make([]func() error, len(qs))
	for i, q := range qs {
		waits[i] = r.stopBegin(ctx, q, kind)
	}
	for i, q := range qs {
		stopped(q, waits[i]())
	}
}

// Stop is StopQueues of one queue.
func (r *fakeRunner) Stop(ctx context.Context, q string, kind drover.StopKind) error {
	var err error
	r.StopQueues(ctx, []string{q}, kind, func(_ string, e error) { err = e })
	return err
}

// stopBegin stops q from starting tasks and returns the wait for its
// drain and release.
func (r *fakeRunner) stopBegin(ctx context.Context, q string, kind drover.StopKind) (wait func() error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kinds[q] = append(r.kinds[q], kind)
	if kind == drover.StopLeave && r.running[q] == nil {
		if cut := r.handing[q]; cut != nil {
			delete(r.handing, q)
			close(cut)
		}
		return func() error { return nil } // the worker's Stop of a queue it no longer runs
	}
	c := r.running[q]
	delete(r.running, q)
	r.stops[q]++
	drain := r.drain
	var cut chan struct{}
	if drain != nil && kind == drover.StopPlanned {
		cut = make(chan struct{})
		r.handing[q] = cut
	}
	return func() error {
		if drain != nil {
			select {
			case <-drain:
			case <-cut:
				r.mu.Lock()
				r.handoversCut[q]++
				r.mu.Unlock()
			case <-ctx.Done():
				r.mu.Lock()
				r.drainsCut[q]++
				r.mu.Unlock()
				return ctx.Err()
			}
		}
		r.mu.Lock()
		if r.handing[q] == cut {
			delete(r.handing, q)
		}
		r.mu.Unlock()
		if c == nil {
			return nil
		}
		return c.Release(ctx, c.Offset())
	}
}

// Abort drops every queue of qs; with abortGate set it then waits for the
// gate, as the worker waits for the aborted loops (abortsBegun counts the
// queues told).
func (r *fakeRunner) Abort(qs ...string) {
	r.mu.Lock()
	for _, q := range qs {
		if r.running[q] != nil {
			r.aborts[q]++
		}
		delete(r.running, q)
		r.abortsBegun++
	}
	gate := r.abortGate
	r.mu.Unlock()
	if gate != nil {
		<-gate
	}
}

func (r *fakeRunner) Configure(qc drover.QueueConfig) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.configs[qc.Name] = qc
	r.configures[qc.Name]++
	return nil
}

// commit commits through the claim the runner holds for q, as a queue loop
// does; it reports whether the runner held q.
func (r *fakeRunner) commit(q string) (bool, error) {
	r.mu.Lock()
	c := r.running[q]
	r.mu.Unlock()
	if c == nil {
		return false, nil
	}
	return true, c.Commit(context.Background(), drover.Offset{Position: 1})
}

// runs reports whether the runner runs q.
func (r *fakeRunner) runs(q string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running[q] != nil
}

// owned returns the running queues, sorted.
func (r *fakeRunner) owned() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	qs := make([]string, 0, len(r.running))
	for q := range r.running {
		qs = append(qs, q)
	}
	sort.Strings(qs)
	return qs
}

// totalStops returns the number of Stops of running queues, all queues.
func (r *fakeRunner) totalStops() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.stops {
		n += c
	}
	return n
}

// stopKinds returns the kinds of q's Stop calls so far.
func (r *fakeRunner) stopKinds(q string) []drover.StopKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]drover.StopKind(nil), r.kinds[q]...)
}

func (r *fakeRunner) count(m map[string]int, q string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return m[q]
}
