package fleet

import (
	"context"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk" // only to delete a candidate node under the election
	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/worker"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// The rebalance protocol against real ZooKeeper: members are Members with
// separate sessions in this process, each recording when it starts and
// stops owning each queue.

// testTimeout is the session timeout of the members: short, so that loss
// and expiry happen quickly.
const testTimeout = 4 * time.Second

// observerTimeout is the session timeout of the tests' own sessions (the
// observer that reads owners, the admin that creates queues). Nothing waits
// for them to expire, so they are long: on a starved machine (two `make
// test` runs beside a `drover dev`) a 4 s observer session was lost while the
// members under test converged, and the test failed for the wrong reason.
const observerTimeout = 30 * time.Second

// connect opens a session under root and closes it at cleanup.
func connect(t testing.TB, servers []string, root string) *coordinator.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: servers, Root: root, SessionTimeout: observerTimeout,
		Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatalf("connect to %v: %v", servers, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// interval is one member's ownership of one queue.
type interval struct {
	member     string
	start, end time.Time // end is zero while open
}

// ownershipLog records ownership intervals and flags two open intervals of
// one queue at once.
type ownershipLog struct {
	mu         sync.Mutex
	intervals  map[string][]*interval // queue → intervals in start order
	open       map[string]*interval   // queue → the open interval
	violations []string
}

func newOwnershipLog() *ownershipLog {
	return &ownershipLog{intervals: map[string][]*interval{}, open: map[string]*interval{}}
}

func (o *ownershipLog) start(member, q string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur := o.open[q]; cur != nil {
		o.violations = append(o.violations, fmt.Sprintf("%s started %s while %s still owned it", member, q, cur.member))
	}
	iv := &interval{member: member, start: time.Now()}
	o.open[q] = iv
	o.intervals[q] = append(o.intervals[q], iv)
}

func (o *ownershipLog) end(member, q string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur := o.open[q]; cur != nil && cur.member == member {
		cur.end = time.Now()
		delete(o.open, q)
		return
	}
	for _, iv := range o.intervals[q] {
		if iv.member == member && iv.end.IsZero() {
			iv.end = time.Now()
		}
	}
}

// owners returns queue → member of the open intervals.
func (o *ownershipLog) owners() map[string]*interval {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string]*interval, len(o.open))
	for q, iv := range o.open {
		out[q] = iv
	}
	return out
}

// checkNoOverlap fails if two intervals of a queue overlap in time.
func (o *ownershipLog) checkNoOverlap(t testing.TB) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.violations) > 0 {
		t.Fatalf("ownership overlapped %d times, first: %s", len(o.violations), o.violations[0])
	}
	for q, ivs := range o.intervals {
		for i := 1; i < len(ivs); i++ {
			prev, cur := ivs[i-1], ivs[i]
			if prev.end.IsZero() || cur.start.Before(prev.end) {
				t.Fatalf("queue %s: %s started at %s before %s's ownership ended (%s)", q, cur.member, cur.start.Format(time.StampMicro), prev.member, prev.end.Format(time.StampMicro))
			}
		}
	}
}

// recordingRunner is a Worker that records ownership and releases claims.
type recordingRunner struct {
	member string
	log    *ownershipLog
	mu     sync.Mutex
	claims map[string]drover.Claim
	writes *atomic.Int64 // claims and releases, shared by the fleet
	// failRelease makes StopQueue stop without releasing and return an
	// error, as a release that timed out under load does.
	failRelease atomic.Bool
	configured  map[string]drover.QueueConfig // ConfigureQueue calls, under mu
	// The freeze guard (Run): guardEnded once it has ended;
	// unguardedStops counts queues stopped after that (the task lease
	// would no longer be renewed during their drain).
	guardEnded     atomic.Bool
	unguardedStops atomic.Int64
}

func (r *recordingRunner) Run(ctx context.Context) error {
	<-ctx.Done()
	r.guardEnded.Store(true)
	return nil
}

func (r *recordingRunner) Start(qc drover.QueueConfig, c drover.Claim) error {
	r.writes.Add(1) // the claim's multi
	r.log.start(r.member, qc.Name)
	r.mu.Lock()
	r.claims[qc.Name] = c
	r.mu.Unlock()
	return nil
}

// StopQueues stops each queue in turn: an idle runner's stops do not wait.
func (r *recordingRunner) StopQueues(ctx context.Context, qs []string, _ drover.StopKind, stopped func(string, error)) {
	for _, q := range qs {
		stopped(q, r.stop(ctx, q))
	}
}

func (r *recordingRunner) stop(ctx context.Context, q string) error {
	if r.guardEnded.Load() {
		r.unguardedStops.Add(1)
	}
	r.mu.Lock()
	c := r.claims[q]
	delete(r.claims, q)
	r.mu.Unlock()
	r.log.end(r.member, q) // stop working before giving the claim up
	if c == nil {
		return nil
	}
	if r.failRelease.Load() {
		return fmt.Errorf("release %s: injected failure", q)
	}
	r.writes.Add(1) // the release's multi
	return c.Release(ctx, c.Offset())
}

func (r *recordingRunner) Abort(qs ...string) {
	for _, q := range qs {
		r.mu.Lock()
		delete(r.claims, q)
		r.mu.Unlock()
		r.log.end(r.member, q)
	}
}

func (r *recordingRunner) Configure(c drover.QueueConfig) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.configured == nil {
		r.configured = map[string]drover.QueueConfig{}
	}
	r.configured[c.Name] = c
	return nil
}

func (r *recordingRunner) SetPause(worker.PauseState) {}
func (r *recordingRunner) SetSuspended(bool)          {}

func (r *recordingRunner) AbortAll() {
	r.mu.Lock()
	qs := make([]string, 0, len(r.claims))
	for q := range r.claims {
		qs = append(qs, q)
	}
	r.mu.Unlock()
	r.Abort(qs...)
}

func (r *recordingRunner) owned() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.claims)
}

// fleet is a set of members sharing one ZooKeeper root.
type fleet struct {
	t       testing.TB
	servers []string
	root    string
	log     *ownershipLog
	queues  int
	obs     *coordinator.Session // an observer session that is no member
	members map[string]*fleetMember
	writes  atomic.Int64            // claims and releases by every member
	settle  time.Duration           // the rebalance settle window; default 100ms
	tags    map[string][]string     // member name → the tags it offers
	health  map[string]*RedisHealth // member name → its Redis prober
}

type fleetMember struct {
	*Member
	name   string
	proxy  *testenv.Proxy
	runner *recordingRunner
	stop   context.CancelFunc // a graceful leave
	done   chan struct{}      // closed when Run returns
}

func newFleet(t testing.TB, servers []string, queues int) *fleet {
	f := &fleet{t: t, servers: servers, root: testenv.Chroot(t), log: newOwnershipLog(), queues: queues, members: map[string]*fleetMember{}}
	f.obs = connect(t, servers, f.root)
	ctx := testkit.Context(t)
	for i := 0; i < queues; i++ {
		if err := f.obs.Queues().Create(ctx, drover.QueueConfig{Name: fmt.Sprintf("q%05d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// start runs a member until it has joined.
func (f *fleet) start(name string) *fleetMember {
	t := f.t
	settle := f.settle
	if settle == 0 {
		settle = 100 * time.Millisecond
	}
	fm := &fleetMember{name: name, proxy: testenv.NewProxy(t, f.servers[0]), done: make(chan struct{}),
		runner: &recordingRunner{member: name, log: f.log, claims: map[string]drover.Claim{}, writes: &f.writes}}
	m, err := NewMember(MemberConfig{
		Name: name, Member: drover.Member{Capacity: 1, Tags: f.tags[name]}, Worker: fm.runner, Settle: settle,
		Coordinator: coordinator.Config{Servers: []string{fm.proxy.Addr}, Root: f.root, SessionTimeout: testTimeout,
			Logger: testkit.Logger(t, hclog.Error)},
		Logger: testkit.Logger(t, hclog.Error), ReconnectMin: 50 * time.Millisecond, RedisHealth: f.health[name],
	})
	if err != nil {
		t.Fatal(err)
	}
	fm.Member = m
	ctx, stop := context.WithCancel(context.Background())
	fm.stop = stop
	go func() { defer close(fm.done); m.Run(ctx) }()
	t.Cleanup(func() { stop(); <-fm.done })
	testkit.Eventually(t, name+" to join", func() bool { return m.Ready() == nil })
	f.members[name] = fm
	return fm
}

// leave is a graceful leave (SIGTERM): resign, leave the membership, hand
// the queues over.
func (f *fleet) leave(name string) {
	m := f.members[name]
	m.stop()
	<-m.done
	delete(f.members, name)
	// The freeze guard renews the task lease: it ran through the drain of
	// every queue and ended before Run returned (DESIGN.md §11, "Stop").
	if n := m.runner.unguardedStops.Load(); n > 0 {
		f.t.Fatalf("%s: want every queue stopped while the freeze guard runs, have %d stopped after it ended", name, n)
	}
	if !m.runner.guardEnded.Load() {
		f.t.Fatalf("%s: want the freeze guard ended when Run returns, have it running", name)
	}
}

// crash cuts a member off ZooKeeper without any goodbye: its session
// expires, and it cannot join again (a crashed process is gone).
func (f *fleet) crash(name string) {
	m := f.members[name]
	m.proxy.Blackhole()
	delete(f.members, name)
}

func (f *fleet) waitFor(what string, cond func() bool) {
	f.t.Helper()
	testkit.Eventually(f.t, what, cond)
}

// converged reports whether every queue is owned by exactly the live member
// the assignment names.
func (f *fleet) converged() (bool, string) {
	an, err := f.obs.Assignments().Read(context.Background())
	if err != nil {
		return false, err.Error()
	}
	if len(an.Assignment.Queues) != f.queues {
		return false, fmt.Sprintf("assignment has %d of %d queues", len(an.Assignment.Queues), f.queues)
	}
	// With more queues than members, every live member has a share: a target
	// that leaves one out is not the one for the current membership.
	assigned := map[string]bool{}
	for _, m := range an.Assignment.Queues {
		assigned[m] = true
	}
	for m := range f.members {
		if !assigned[m] {
			return false, fmt.Sprintf("live member %s has no queue yet", m)
		}
	}
	owners := f.log.owners()
	for q, m := range an.Assignment.Queues {
		if f.members[m] == nil {
			return false, fmt.Sprintf("%s assigned to %s, which is not live", q, m)
		}
		if iv := owners[q]; iv == nil || iv.member != m {
			owner := "nobody"
			if iv != nil {
				owner = iv.member
			}
			return false, fmt.Sprintf("%s assigned to %s (generation %d) but run by %s; %s", q, m, an.Assignment.Generation, owner, f.diagnose(q, m))
		}
	}
	return true, ""
}

func (f *fleet) waitConverged(phase string) {
	f.t.Helper()
	var why string
	deadline := time.Now().Add(testkit.Bound)
	for {
		ok, w := f.converged()
		if ok {
			break
		}
		why = w
		if time.Now().After(deadline) {
			f.t.Fatalf("%s did not converge: %s", phase, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.log.checkNoOverlap(f.t)
}

// diagnose says, for a failure message, who holds q's owner node and what
// member m is doing.
func (f *fleet) diagnose(q, m string) string {
	out := "owner node: "
	if on, err := f.obs.Claims().Owner(context.Background(), q); err != nil {
		out += err.Error()
	} else {
		out += fmt.Sprintf("member %s session %#x generation %d", on.Owner.Member, on.Session, on.Owner.Generation)
	}
	if fm := f.members[m]; fm != nil {
		if s := fm.Session(); s != nil {
			out += fmt.Sprintf("; %s: session %#x %s", m, s.SessionID(), s.State())
		}
		out += fmt.Sprintf(", runner holds %d queues", fm.runner.owned())
	}
	return out
}

// snapshot returns queue → open interval.
func (f *fleet) snapshot() map[string]*interval { return f.log.owners() }

// checkStayed fails unless every queue whose owner is in keep still has the
// very interval it had before: it was never interrupted.
func (f *fleet) checkStayed(before map[string]*interval, gone map[string]bool, phase string) (moved int) {
	f.t.Helper()
	after := f.snapshot()
	for q, iv := range before {
		if gone[iv.member] {
			moved++
			continue
		}
		if after[q] != iv {
			if after[q] != nil && after[q].member == iv.member {
				f.t.Fatalf("%s: queue %s stayed with %s but was interrupted", phase, q, iv.member)
			}
			moved++
		}
	}
	return moved
}

func TestRebalanceProtocolThroughJoinLeaveCrashLeaderCrashAndRollingRestart(t *testing.T) {
	const members, queues = 10, 1000
	f := newFleet(t, testenv.ZooKeeper(t).Addrs, queues)
	for i := 0; i < members-1; i++ {
		f.start(fmt.Sprintf("m%02d", i))
	}
	f.waitConverged("start")

	// Join: the newcomer takes its share, and only queues moving to it move.
	before := f.snapshot()
	f.start(fmt.Sprintf("m%02d", members-1))
	f.waitConverged("join")
	moved := f.checkStayed(before, nil, "join")
	newcomer := f.members[fmt.Sprintf("m%02d", members-1)].runner.owned()
	if moved != newcomer || newcomer != queues/members {
		t.Fatalf("join: want exactly %d queues moved to the newcomer, have %d moved and %d at the newcomer", queues/members, moved, newcomer)
	}

	// Graceful leave: only the leaver's queues move.
	before = f.snapshot()
	f.leave("m03")
	f.waitConverged("leave")
	f.checkStayed(before, map[string]bool{"m03": true}, "leave")

	// Crash (session cut): only the crashed member's queues move.
	before = f.snapshot()
	f.crash("m05")
	f.waitConverged("crash")
	f.checkStayed(before, map[string]bool{"m05": true}, "crash")

	// Leader crash.
	el, _ := f.obs.Group().Election(coordinator.ElectionRebalance)
	li, err := el.Leader(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	before = f.snapshot()
	f.crash(li.Name)
	f.waitConverged("leader crash")
	f.checkStayed(before, map[string]bool{li.Name: true}, "leader crash")

	// Rolling restart of every member, under the same names.
	names := make([]string, 0, len(f.members))
	for n := range f.members {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f.leave(n)
		f.start(n)
		f.waitConverged("restart of " + n)
	}
	f.log.checkNoOverlap(t)
}

func TestRebalanceStormConverges(t *testing.T) {
	const queues = 300
	f := newFleet(t, testenv.ZooKeeper(t).Addrs, queues)
	for i := 0; i < 4; i++ {
		f.start(fmt.Sprintf("base%d", i))
	}
	f.waitConverged("start")
	// 50 membership changes within 5 seconds: joins, graceful leaves and
	// crashes of short-lived members.
	var churn []string
	for i := 0; i < 50; i++ {
		switch {
		case i%3 == 2 && len(churn) > 0:
			n := churn[0]
			churn = churn[1:]
			if i%2 == 0 {
				f.crash(n)
			} else {
				m := f.members[n]
				m.stop() // a graceful leave, not awaited: the storm goes on
				delete(f.members, n)
			}
		default:
			n := fmt.Sprintf("churn%02d", i)
			f.start(n)
			churn = append(churn, n)
		}
		time.Sleep(90 * time.Millisecond) // the storm's pace, not a synchronisation
	}
	f.waitConverged("storm")
	if ok, why := f.converged(); !ok {
		t.Fatalf("after the storm: %s", why)
	}
	var stuck []string
	owners := f.snapshot()
	for i := 0; i < queues; i++ {
		q := fmt.Sprintf("q%05d", i)
		if owners[q] == nil {
			stuck = append(stuck, q)
		}
	}
	if len(stuck) > 0 {
		t.Fatalf("unowned after the storm: %s", strings.Join(stuck, ", "))
	}
}

// A release that fails while the session lives must not leave the owner
// node behind: the reconciler gives the claim back itself, and the queues
// reach their new owner.
func TestFailedReleaseDoesNotStrandTheQueue(t *testing.T) {
	f := newFleet(t, testenv.ZooKeeper(t).Addrs, 40)
	a := f.start("a")
	f.waitConverged("start")
	a.runner.failRelease.Store(true)
	f.start("b")
	f.waitConverged("join with failing releases")
	if n := f.members["b"].runner.owned(); n != 20 {
		t.Fatalf("b: want its 20 queues, have %d", n)
	}
}

// An owner node of the member's own session without a Claim (a claim whose
// reply was lost or abandoned) is an orphan: the reconciler drops it and
// claims the queue instead of waiting on itself forever.
func TestOrphanOwnerNodeOfOwnSessionIsDropped(t *testing.T) {
	s := connect(t, testenv.ZooKeeper(t).Addrs, testenv.Chroot(t))
	ctx := testkit.Context(t)
	if _, err := s.Claims().Claim(ctx, "q", coordinator.Owner{Member: "m"}); err != nil {
		t.Fatal(err)
	} // the Claim is forgotten, as when its reply was lost: an orphan
	zk := zkSession{s}.Reconciler()
	r := &reconciler{s: zk, cfg: ReconcilerConfig{Member: "m"}, log: testkit.Logger(t, hclog.Warn), owned: map[string]Claim{},
		claiming: map[string]context.CancelFunc{}, stopping: map[string]chan struct{}{}, events: make(chan reconcileEvent),
		cfgWatch: zk.WatchQueueConfigs(ctx)}
	r.target = map[string]bool{"q": true}
	r.claim(ctx, "q")
	select {
	case ev := <-r.events:
		if ev.claim == nil {
			t.Fatal("want the queue claimed after the orphan is dropped, have no claim")
		}
		if err := ev.claim.Commit(ctx, drover.Offset{Position: 7, CommittedAt: time.Now().UTC(), Member: "m"}); err != nil {
			t.Fatalf("the new claim must hold: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the claim waited on its own session's orphan owner node")
	}
}

// A member that restarts within the settle window (a new session under the
// same stable name) gets its queues back: sticky keeps the assignment, the
// generation does not change, and the other members are not disturbed.
func TestRestartWithinSettleWindowKeepsTheQueues(t *testing.T) {
	f := newFleet(t, testenv.ZooKeeper(t).Addrs, 60)
	f.settle = 3 * time.Second
	for _, n := range []string{"a", "b", "c"} {
		f.start(n)
	}
	f.waitConverged("start")
	an, err := f.obs.Assignments().Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	before := f.snapshot()
	mine := map[string]bool{}
	for q, iv := range before {
		if iv.member == "b" {
			mine[q] = true
		}
	}
	// Restart b: its session ends (its member and owner nodes vanish) and
	// it joins again at once under the same name.
	f.members["b"].Session().Close()
	f.waitFor("b to run its queues again", func() bool {
		owners := f.log.owners()
		for q := range mine {
			if iv := owners[q]; iv == nil || iv.member != "b" || iv == before[q] {
				return false
			}
		}
		return true
	})
	an2, err := f.obs.Assignments().Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if an2.Assignment.Generation != an.Assignment.Generation {
		t.Fatalf("restart within the settle window: generation went from %d to %d", an.Assignment.Generation, an2.Assignment.Generation)
	}
	f.checkStayed(before, map[string]bool{"b": true}, "restart of b")
	f.log.checkNoOverlap(t)
}

// An owned queue's reconfiguration reaches the runner: the reconciler
// watches the configs of the queues it owns (and only those).
func TestReconfiguringAnOwnedQueueReachesTheRunner(t *testing.T) {
	f := newFleet(t, testenv.ZooKeeper(t).Addrs, 4)
	m := f.start("a")
	f.waitConverged("start")
	e, err := f.obs.Queues().Get(context.Background(), "q00002")
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.Config
	cfg.Concurrency = 7
	if _, err := f.obs.Queues().Update(context.Background(), cfg, e.Version); err != nil {
		t.Fatal(err)
	}
	f.waitFor("the runner to get the new config", func() bool {
		m.runner.mu.Lock()
		defer m.runner.mu.Unlock()
		return m.runner.configured["q00002"].Concurrency == 7
	})
}

// A queue's tags reach the rebalance leader through its registry bucket
// (the leader reads no queue config): requiring a tag only one member
// offers moves the queue there.
func TestATagChangeReachesTheLeaderThroughTheRegistry(t *testing.T) {
	f := newFleet(t, testenv.ZooKeeper(t).Addrs, 4)
	f.tags = map[string][]string{"g": {"gpu"}}
	f.start("a")
	f.start("g")
	f.waitConverged("start")
	ctx := testkit.Context(t)
	var q string
	an, err := f.obs.Assignments().Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range an.Assignment.Queues {
		if m == "a" {
			q = name
		}
	}
	if q == "" {
		t.Fatalf("want a queue on a, have %+v", an.Assignment.Queues)
	}
	e, err := f.obs.Queues().Get(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.Config
	cfg.Tags = []string{"gpu"}
	if _, err := f.obs.Queues().Update(ctx, cfg, e.Version); err != nil {
		t.Fatal(err)
	}
	f.waitFor(q+" to move to g", func() bool {
		an, err := f.obs.Assignments().Read(ctx)
		return err == nil && an.Assignment.Queues[q] == "g"
	})
	f.waitConverged("after the tag change")
	f.log.checkNoOverlap(t)
}

// A scheduler candidate whose candidate node vanishes while it waits (an
// operator's delete, a server-side glitch) must keep campaigning while its
// session lives: a campaign error is not the end of the candidacy (the
// defect of issue 13, against a real server).
func TestSchedulerCandidacySurvivesACampaignErrorOnZooKeeper(t *testing.T) {
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func() *coordinator.Session {
		s, err := coordinator.Connect(ctx, coordinator.Config{Servers: server.Addrs, Root: root, SessionTimeout: 4 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s1, s2 := connect(), connect()
	el1, _ := s1.Group().Election(coordinator.ElectionScheduler)
	el2, _ := s2.Group().Election(coordinator.ElectionScheduler)
	first := &SchedulerLeadership{Candidacy: &Candidacy{Elector: zkElection{el1}, Candidate: "a", Session: s1}}
	if _, err := first.Lead(ctx); err != nil {
		t.Fatal(err)
	}
	second := &SchedulerLeadership{Candidacy: &Candidacy{Elector: zkElection{el2}, Candidate: "b", Session: s2, Retry: 10 * time.Millisecond}}
	type result struct {
		term context.Context
		err  error
	}
	led := make(chan result, 1)
	go func() { term, err := second.Lead(ctx); led <- result{term, err} }()

	raw, _, err := zk.Connect(server.Addrs, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	dir := root + "/election/" + coordinator.ElectionScheduler
	leader, err := el1.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var waiting string
	for waiting == "" && ctx.Err() == nil { // until the second candidate's node exists
		names, _, err := raw.Children(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if n != path.Base(leader.Node) {
				waiting = dir + "/" + n
			}
		}
	}
	if err := raw.Delete(waiting, -1); err != nil {
		t.Fatal(err)
	}
	first.Resign()

	select {
	case r := <-led:
		if r.err != nil {
			t.Fatalf("want the second candidate to lead after the first resigned, have Lead error: %v", r.err)
		}
	case <-ctx.Done():
		t.Fatal("want the second candidate to lead after the first resigned, have no leader")
	}
}
