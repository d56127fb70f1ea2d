package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	membership "github.com/drover-dev/drover/fleet" // this file has a type fleet
	"github.com/drover-dev/drover/internal/testing/proxy"
)

// A fleet is a set of members, each a separate ZooKeeper session in this
// process (as in coordinator/fleet_test.go) that runs the real rebalancer
// and reconciler; its Runner only records ownership and releases claims on
// stop. Each member talks to ZooKeeper through its own counting proxy.

// ownership records which member runs each queue, and how far that is
// from the observer's assignment: kept as each start and end happens, so
// that checking convergence costs nothing per queue. Walking every queue
// at each poll took 44% of this process's CPU during a join at 300,000
// queues, CPU the members being measured needed (docs/decisions.md,
// "Issue 43: a million keys").
type ownership struct {
	mu         sync.Mutex
	owner      map[string]string // queue → member running it
	violations int               // starts while another member still ran the queue
	changes    atomic.Int64      // bumped on every start and stop

	want        map[string]string // the observer's assignment: queue → member
	wantGen     int64             // its generation
	wantAt      time.Time         // when setWant took it
	wantGot     time.Time         // when Assignments.Watch delivered it
	wantMembers map[string]int    // queues per member in want
	off         int               // queues of want not run by the member it names
}

func newOwnership() *ownership { return &ownership{owner: map[string]string{}} }

func (o *ownership) start(member, q string) {
	o.mu.Lock()
	prev, ok := o.owner[q]
	if ok && prev != member {
		o.violations++
	}
	o.owner[q] = member
	o.moved(q, prev)
	o.mu.Unlock()
	o.changes.Add(1)
}

func (o *ownership) end(member, q string) {
	o.mu.Lock()
	if prev := o.owner[q]; prev == member {
		delete(o.owner, q)
		o.moved(q, prev)
	}
	o.mu.Unlock()
	o.changes.Add(1)
}

// moved updates off after q's runner changed from prev; o.mu held.
func (o *ownership) moved(q, prev string) {
	m, ok := o.want[q]
	if !ok {
		return
	}
	wasOff, isOff := prev != m, o.owner[q] != m
	switch {
	case wasOff && !isOff:
		o.off--
	case !wasOff && isOff:
		o.off++
	}
}

// setWant makes a the assignment ownership is compared with. A new
// generation of the same queues is compared with the one before without
// holding the bookkeeping (the observer alone calls setWant, so o.want
// stays what it read), and only the queues it moved are counted again
// under the lock: counting every queue under the lock took 0.33 s of CPU
// at each generation at a million queues, while the members' starts and
// stops waited for the lock (docs/decisions.md, "Issue 43: the bench's
// observer at a million").
func (o *ownership) setWant(a *drover.Assignment) {
	o.mu.Lock()
	prev := o.want
	o.mu.Unlock()
	var changed []string
	same := prev != nil && len(prev) == len(a.Queues)
	if same {
		for q, m := range a.Queues {
			if pm := prev[q]; pm != m {
				if pm == "" {
					same = false // another set of queues
					break
				}
				changed = append(changed, q)
			}
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !same {
		members := map[string]int{}
		off := 0
		for q, m := range a.Queues {
			members[m]++
			if o.owner[q] != m {
				off++
			}
		}
		o.want, o.wantGen, o.wantMembers, o.off, o.wantAt = a.Queues, a.Generation, members, off, time.Now()
		return
	}
	for _, q := range changed {
		was, now, runner := prev[q], a.Queues[q], o.owner[q]
		switch wasOff, isOff := runner != was, runner != now; {
		case wasOff && !isOff:
			o.off--
		case !wasOff && isOff:
			o.off++
		}
		if o.wantMembers[was]--; o.wantMembers[was] == 0 {
			delete(o.wantMembers, was)
		}
		o.wantMembers[now]++
	}
	o.want, o.wantGen, o.wantAt = a.Queues, a.Generation, time.Now()
}

// observed says when, after t0, the observer took the generation the
// fleet converged on: a convergence right after it was waiting for the
// observer, not for the members.
func (f *fleet) observed(t0 time.Time) string {
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	return fmt.Sprintf("observer got generation %d at %s, had it counted at %s", f.log.wantGen, f.log.wantGot.Sub(t0).Round(time.Millisecond), f.log.wantAt.Sub(t0).Round(time.Millisecond))
}

// fleetRunner is a membership.Runner that records ownership and releases
// claims: a worker whose queues are idle.
type fleetRunner struct {
	member string
	log    *ownership
	mu     sync.Mutex
	claims map[string]drover.Claim
}

func (r *fleetRunner) Start(qc drover.QueueConfig, c drover.Claim) error {
	r.log.start(r.member, qc.Name)
	r.mu.Lock()
	r.claims[qc.Name] = c
	r.mu.Unlock()
	return nil
}

// StopQueues stops every queue at once and reports each in turn, as a
// worker does (worker.StopQueues: every queue's loop releases its own
// claim, so the releases coalesce into multis): an idle runner's stops do
// not wait. Releasing one queue after another made a member giving 100
// queues up take 100 round trips, which a worker never does.
func (r *fleetRunner) StopQueues(ctx context.Context, qs []string, _ drover.StopKind, stopped func(string, error)) {
	errs := make([]chan error, len(qs))
	for i, q := range qs {
		errs[i] = make(chan error, 1)
		go func() { errs[i] <- r.stop(ctx, q) }()
	}
	for i, q := range qs {
		stopped(q, <-errs[i])
	}
}

func (r *fleetRunner) stop(ctx context.Context, q string) error {
	r.mu.Lock()
	c := r.claims[q]
	delete(r.claims, q)
	r.mu.Unlock()
	r.log.end(r.member, q)
	if c == nil {
		return nil
	}
	return c.Release(ctx, c.Offset())
}

func (r *fleetRunner) Abort(qs ...string) {
	for _, q := range qs {
		r.mu.Lock()
		delete(r.claims, q)
		r.mu.Unlock()
		r.log.end(r.member, q)
	}
}

func (r *fleetRunner) Configure(drover.QueueConfig) error { return nil }

type fleet struct {
	srv     *servers
	root    string
	queues  int
	timeout time.Duration // session timeout of every member
	log     *ownership
	obs     *coordinator.Session // observer: not a member, not counted
	assign  atomic.Pointer[drover.Assignment]
	// moved counts the queues the leaders' assignments moved (handovers).
	moved atomic.Int64
	// assignedAt is when the observer first saw every queue assigned.
	assignedAt atomic.Pointer[time.Time]
	stopObs    context.CancelFunc
	// reached is when the last event converged (waitConverged's
	// goroutine only).
	reached *convergedAt

	mu      sync.Mutex
	members map[string]*fleetMember
	gone    []*fleetMember // crashed members, closed at the end
	lost    []string       // members whose session ended without a crash
}

type fleetMember struct {
	name   string
	mb     *coordinator.Membership
	proxy  *proxy.Proxy
	s      *coordinator.Session
	cancel context.CancelFunc
	done   chan struct{}
}

// observerTimeout is the observer's session timeout: the private server's
// largest (localserver's maxSessionTimeout).
const observerTimeout = 60 * time.Second

// newFleet creates the queues under a fresh root and starts the observer.
func newFleet(ctx context.Context, srv *servers, root string, queues int, timeout time.Duration) (*fleet, error) {
	f := &fleet{srv: srv, root: root, queues: queues, timeout: timeout, log: newOwnership(), members: map[string]*fleetMember{}}
	// The observer is not a member: its session is as long as the server
	// allows, so that a loaded machine does not cost it its session (its
	// assignment would freeze, and every later event look unconverged).
	obs, err := srv.connectZK(ctx, root, "", observerTimeout)
	if err != nil {
		return nil, err
	}
	f.obs = obs
	// Create the queues in batches (multis under 512 KB).
	cfgs := make([]drover.QueueConfig, queues)
	for i := range cfgs {
		cfgs[i] = drover.QueueConfig{Name: queueName(i)}
	}
	if n, err := obs.Queues().CreateMany(ctx, cfgs); err != nil {
		obs.Close()
		return nil, fmt.Errorf("create queues (%d of %d created): %w", n, queues, err)
	}
	octx, stop := context.WithCancel(ctx)
	f.stopObs = stop
	ch := obs.Assignments().Watch(octx)
	go func() {
		for an := range ch {
			if an.Err == nil {
				got := time.Now()
				a := an.Assignment
				f.log.setWant(&a)
				f.log.mu.Lock()
				f.log.wantGot = got
				f.log.mu.Unlock()
				f.assign.Store(&a)
				if len(a.Queues) == queues && f.assignedAt.Load() == nil {
					now := time.Now()
					f.assignedAt.Store(&now)
				}
			}
		}
	}()
	return f, nil
}

func queueName(i int) string { return fmt.Sprintf("q%05d", i) }

// start connects, joins and runs one member.
func (f *fleet) start(ctx context.Context, name string) (*fleetMember, error) {
	px, err := proxy.New(f.srv.zk.Addr, proxy.CountReadsUnder(f.root+"/assignment"))
	if err != nil {
		return nil, err
	}
	s, err := f.srv.connectZK(ctx, f.root, px.Addr, f.timeout)
	if err != nil {
		px.Close()
		return nil, err
	}
	if name == "m-joined" {
		debugEvent("connected")
	}
	mb, err := s.Group().Join(ctx, drover.Member{Name: name, Capacity: 1})
	if err != nil {
		s.Close()
		px.Close()
		return nil, err
	}
	mctx, cancel := context.WithCancel(context.Background())
	m := &fleetMember{name: name, mb: mb, proxy: px, s: s, cancel: cancel, done: make(chan struct{})}
	runner := &fleetRunner{member: name, log: f.log, claims: map[string]drover.Claim{}}
	zs := membership.SessionPorts(s)
	el, err := zs.Group().Elector(coordinator.ElectionRebalance)
	if err != nil {
		cancel()
		s.Close()
		px.Close()
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		membership.RunRebalancer(mctx, membership.RebalancerConfig{Session: zs.Leader(), Elector: el, Candidate: name, Logger: benchLogger.Named(name),
			OnRebalance: func(_ drover.Assignment, moved int, _ time.Duration) { f.moved.Add(int64(moved)) }})
	}()
	go func() {
		defer wg.Done()
		membership.RunReconciler(mctx, membership.ReconcilerConfig{Session: zs.Reconciler(), Member: name, MemberPath: mb.Path(), Runner: runner, Logger: benchLogger.Named(name)})
	}()
	go func() { wg.Wait(); close(m.done) }()
	f.mu.Lock()
	f.members[name] = m
	f.mu.Unlock()
	go func() {
		// A session that ends by itself (not cut by crash, not closed at
		// the end) is a lost member: a real worker would join again under
		// a new session; here it is counted and leaves the live set.
		<-s.Done()
		f.mu.Lock()
		lost := f.members[name] == m
		if lost {
			delete(f.members, name)
			f.gone = append(f.gone, m)
			f.lost = append(f.lost, name)
		}
		f.mu.Unlock()
		if lost {
			// As a worker does (fleet.Member): a lost session is closed, so
			// its member node goes and the leader moves its queues.
			s.Close()
		}
	}()
	return m, nil
}

// crash cuts a member off ZooKeeper without a goodbye: its session expires
// on the server after the session timeout.
func (f *fleet) crash(name string) {
	f.mu.Lock()
	m := f.members[name]
	delete(f.members, name)
	f.gone = append(f.gone, m)
	f.mu.Unlock()
	m.proxy.Cut()
}

// leave stops a member as a worker's graceful shutdown does: it leaves the
// membership (the leader rebalances at once) while its reconciler stops its
// queues and releases them.
func (f *fleet) leave(ctx context.Context, name string) {
	f.mu.Lock()
	m := f.members[name]
	delete(f.members, name)
	f.gone = append(f.gone, m)
	f.mu.Unlock()
	m.mb.Leave(ctx)
	m.cancel()
}

// shareBytes returns the JSON size of each member's share in the current
// assignment (the queue names as a member's chunks carry them).
func (f *fleet) shareBytes() map[string]int64 {
	out := map[string]int64{}
	if a := f.assign.Load(); a != nil {
		for q, m := range a.Queues {
			out[m] += int64(len(q) + 3)
		}
	}
	return out
}

// memberCounts returns each member's request counters, live and gone.
func (f *fleet) memberCounts() map[string]proxy.Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]proxy.Counts{}
	for n, m := range f.members {
		out[n] = m.proxy.Counts()
	}
	for _, m := range f.gone {
		out[m.name] = m.proxy.Counts()
	}
	return out
}

// leader returns the name of the current rebalance leader.
func (f *fleet) leader(ctx context.Context) (string, error) {
	el, err := f.obs.Group().Election(coordinator.ElectionRebalance)
	if err != nil {
		return "", err
	}
	li, err := el.Leader(ctx)
	if err != nil {
		return "", err
	}
	return li.Name, nil
}

// converged reports whether every queue is run by exactly the live member
// the current assignment names, and every live member has a share.
func (f *fleet) converged() (bool, string) {
	a := f.assign.Load()
	if a == nil {
		return false, "no assignment yet"
	}
	if len(a.Queues) != f.queues {
		return false, fmt.Sprintf("assignment has %d of %d queues", len(a.Queues), f.queues)
	}
	f.mu.Lock()
	live := make(map[string]bool, len(f.members))
	for n := range f.members {
		live[n] = true
	}
	f.mu.Unlock()
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	if f.log.wantGen != a.Generation {
		return false, fmt.Sprintf("the observer is reading generation %d", a.Generation)
	}
	for m := range live {
		if f.log.wantMembers[m] == 0 {
			return false, fmt.Sprintf("live member %s has no queue yet", m)
		}
	}
	for m, n := range f.log.wantMembers {
		if !live[m] {
			return false, fmt.Sprintf("%d queues assigned to %s, which is not live", n, m)
		}
	}
	if f.log.off > 0 {
		return false, fmt.Sprintf("%d queues not run by the member assigned", f.log.off)
	}
	// Once the counts say so, every queue is checked, once: the figure
	// never rests on the bookkeeping alone. The bookkeeping is held from
	// here, so the state checked is the state of this instant: the event's
	// figures (its time and CPU) are taken now, and the walk, 0.3 s of
	// CPU at a million queues, is not in them.
	at := f.snapshot()
	for q, m := range a.Queues {
		if f.log.owner[q] != m {
			return false, fmt.Sprintf("%s assigned to %s but run by %q (the bookkeeping missed it)", q, m, f.log.owner[q])
		}
	}
	f.reached = &at
	return true, ""
}

// convergedAt is the instant converged found the fleet converged and the
// CPU spent by then, this process's and the server's.
type convergedAt struct {
	when          time.Time
	members, zook time.Duration
}

func (f *fleet) snapshot() convergedAt {
	return convergedAt{when: time.Now(), members: readCPU().self, zook: procCPU(f.srv.zk.PID())}
}

var debugScale = os.Getenv("BENCH_DEBUG_SCALE") != ""

// benchLogger is the logger of every session and fleet member: silent,
// or with BENCH_LOG=<file> Info and up into that file.
var benchLogger = func() hclog.Logger {
	p := os.Getenv("BENCH_LOG")
	if p == "" {
		return hclog.NewNullLogger()
	}
	f, err := os.Create(p)
	if err != nil {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Output: f, Level: hclog.Info, TimeFormat: "15:04:05.000"})
}()

// waitConverged polls until converged, bounded by limit, and returns the
// time since t0.
func (f *fleet) waitConverged(ctx context.Context, t0 time.Time, limit time.Duration) (time.Duration, error) {
	f.reached = nil
	deadline := t0.Add(limit)
	var why string
	lastReport := time.Now()
	for {
		if debugScale && time.Since(lastReport) > 10*time.Second {
			lastReport = time.Now()
			f.log.mu.Lock()
			owned := len(f.log.owner)
			f.log.mu.Unlock()
			st, _ := mntr(f.srv.zk.Addr)
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			f.mu.Lock()
			lost := len(f.lost)
			f.mu.Unlock()
			fmt.Fprintf(os.Stderr, "    %s: lost %d, owned %d, %+v, zk watches %d outstanding %d avg latency %d max %d; goroutines %d heap %d MiB; %s\n",
				time.Since(t0).Round(time.Second), lost, owned, f.counts(), st["zk_watch_count"], st["zk_outstanding_requests"], st["zk_avg_latency"], st["zk_max_latency"],
				runtime.NumGoroutine(), ms.HeapInuse>>20, why)
		}
		if err := f.obs.Err(); err != nil {
			return 0, fmt.Errorf("the observer lost its session, so the assignment it follows is stale: %w", err)
		}
		var ok bool
		checked := time.Now()
		if ok, why = f.converged(); ok {
			return f.reached.when.Sub(t0), nil
		}
		// A check walks every queue: poll at most half the time, so that
		// the measurement does not take the members' CPU.
		pause := max(10*time.Millisecond, time.Since(checked))
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("not converged after %s: %s (%s)", limit.Round(time.Second), why, f.progress())
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%w after %s: %s (%s)", ctx.Err(), time.Since(t0).Round(time.Second), why, f.progress())
		case <-time.After(pause):
		}
	}
}

// counts sums the request counters of every member, live and crashed.
func (f *fleet) counts() proxy.Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	var c proxy.Counts
	for _, m := range f.members {
		c = c.Add(m.proxy.Counts())
	}
	for _, m := range f.gone {
		c = c.Add(m.proxy.Counts())
	}
	return c
}

// close stops every member (live ones leave gracefully) and the observer.
func (f *fleet) close() {
	f.mu.Lock()
	ms := make([]*fleetMember, 0, len(f.members)+len(f.gone))
	for _, m := range f.members {
		ms = append(ms, m)
	}
	ms = append(ms, f.gone...)
	f.members = map[string]*fleetMember{}
	f.gone = nil
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.s.Close() // ends the session: the reconciler aborts, nothing drains
			m.cancel()
			select {
			case <-m.done:
			case <-time.After(30 * time.Second):
			}
			m.proxy.Close()
		}()
	}
	wg.Wait()
	f.stopObs()
	f.obs.Close()
}

// opCounts sums every member's requests by operation code.
func (f *fleet) opCounts() map[int32]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[int32]int64{}
	add := func(m *fleetMember) {
		for op, n := range m.proxy.Counts().ByOp {
			out[op] += n
		}
	}
	for _, m := range f.members {
		add(m)
	}
	for _, m := range f.gone {
		add(m)
	}
	return out
}

// debugOps prints, with BENCH_DEBUG_SCALE set, the requests by operation
// code since before (for finding where an event's requests go).
func debugOps(what string, before, after map[int32]int64) {
	if debugScale {
		printOps(os.Stderr, what, before, after)
	}
}

// countsLine says what an event's requests read and wrote: a multiRead
// is one read request of many nodes, a multi one write of many.
func countsLine(c proxy.Counts) string {
	return fmt.Sprintf("%d (reads %d, of %d nodes; writes %d, of %d ops)", c.Requests(), c.Reads, c.ReadOps, c.Writes, c.WriteOps)
}

// printOps prints the requests by operation code since before: an
// event's requests by kind (a multiRead is one request however many nodes
// it reads).
func printOps(w io.Writer, what string, before, after map[int32]int64) {
	var parts []string
	for op, n := range after {
		if d := n - before[op]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", proxy.OpName(op), d))
		}
	}
	sort.Strings(parts)
	fmt.Fprintf(w, "    %s requests by kind: %s\n", what, strings.Join(parts, ", "))
}

// debugEvent notes, with BENCH_DEBUG_SCALE set, when an event starts.
func debugEvent(what string) {
	if debugScale {
		fmt.Fprintf(os.Stderr, "    %s %s starts\n", time.Now().Format("15:04:05.000"), what)
	}
}

// progress describes how far the fleet got: queues assigned and run,
// sessions lost, and the server's znodes and watches.
func (f *fleet) progress() string {
	assigned := 0
	if a := f.assign.Load(); a != nil {
		assigned = len(a.Queues)
	}
	f.log.mu.Lock()
	run := len(f.log.owner)
	f.log.mu.Unlock()
	f.mu.Lock()
	lost := len(f.lost)
	f.mu.Unlock()
	out := fmt.Sprintf("%d of %d queues assigned, %d run; %d member sessions lost", assigned, f.queues, run, lost)
	if st, err := mntr(f.srv.zk.Addr); err == nil {
		out += fmt.Sprintf("; ZooKeeper holds %d znodes, %d watches, %d requests outstanding", st["zk_znode_count"], st["zk_watch_count"], st["zk_outstanding_requests"])
	} else {
		out += fmt.Sprintf("; ZooKeeper does not answer mntr: %v", err)
	}
	return out
}
