package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drover-dev/drover"
)

// Pools of warm children for pooled routes (docs/process-pool.md). A pool
// belongs to one route identity — the route (argv, env, dir, recycling
// limits), the queue's resource limits, user and group: everything that
// makes two routes' children interchangeable — and serves every queue of the
// worker whose tasks have that identity, so that a worker serving 10,000
// keys of one pooled route keeps one pool, not 10,000. It holds at most its
// size of children (the worker's slots), starts a child when a task finds
// none idle and there is room, else queues the task first come, first
// served until a child comes back; it keeps a child for the next task and
// replaces it when it reaches a recycling limit, dies, breaks the protocol
// or runs past a deadline. A queue's own concurrency and order are its
// loop's business: the pool runs what it is handed.

// Pool timing.
const (
	// poolIdleTimeout: a child idle this long is stopped.
	poolIdleTimeout = 5 * time.Minute
	// poolSweepInterval: how often idle children are looked at.
	poolSweepInterval = 30 * time.Second
	// childReadyTimeout bounds a child's start until its ready frame when
	// the task that asked for it has no time limit.
	childReadyTimeout = time.Minute
)

// poolKey identifies a pool: what makes two tasks' children
// interchangeable. The queue is not part of it (the task frame carries it).
type poolKey struct {
	route       string // the route as JSON
	limits      drover.Limits
	user, group string
}

// fastPoolKey finds a pool without encoding the route.
type fastPoolKey struct {
	pool        *drover.PoolConfig
	limits      drover.Limits
	user, group string
}

// sameRoute reports whether two routes are equal.
func sameRoute(a, b drover.TaskRoute) bool {
	return a.Go == b.Go && a.Inline == b.Inline && a.Dir == b.Dir && slices.Equal(a.Command, b.Command) &&
		maps.Equal(a.Env, b.Env) && (a.Pool == b.Pool || (a.Pool != nil && b.Pool != nil && *a.Pool == *b.Pool))
}

// pools holds every pool of an executor.
type pools struct {
	e *execExecutor
	// idleTimeout and sweepEvery are poolIdleTimeout and
	// poolSweepInterval (tests shorten them before the first pool).
	idleTimeout, sweepEvery time.Duration

	mu      sync.Mutex
	byKey   map[poolKey]*childPool
	recent  map[fastPoolKey]*childPool // pools removed from byKey are dropped here too
	closed  bool
	sweeper chan struct{} // closed by close; nil until the first pool
	bg      sync.WaitGroup
}

// childPool is one route identity's warm children.
type childPool struct {
	ps    *pools
	key   poolKey
	route drover.TaskRoute
	conf  drover.PoolConfig
	spec  Task // route, limits, user and group of its children
	// opened is the queue whose task made the pool (the state shows it).
	opened string
	// stopCtx ends starts under way when the pool is stopped.
	stopCtx    context.Context
	stopStarts context.CancelFunc

	mu        sync.Mutex
	idle      []*pooledChild // most recently used last
	live      map[*pooledChild]struct{}
	starting  int             // starts under way
	checkouts int             // tasks in checkout (waiting for a child)
	waiters   []*childWaiter  // tasks waiting for a child, first come first served
	users     map[string]bool // queues that ran a task here since they released it
	size      int             // the most children (the worker's slots) at the last task; 0: unbounded
	ahead     int             // live children whose replacement was started ahead (may exceed size)
	stopped   bool
}

// childWaiter is a task waiting for a child. Whoever hands it a child (or
// the error of a failed start) removes it from the waiters and sends on ch
// under the pool's mutex; ch holds one.
type childWaiter struct {
	ch chan childOrError
}

type childOrError struct {
	c   *pooledChild
	err error
}

func newPools(e *execExecutor) *pools {
	return &pools{e: e, byKey: map[poolKey]*childPool{}, recent: map[fastPoolKey]*childPool{},
		idleTimeout: poolIdleTimeout, sweepEvery: poolSweepInterval}
}

// get returns t's pool, creating it; nil once the pools are closed.
func (ps *pools) get(t *Task) *childPool {
	// Fast path: the queue loops hand every task of a route the same
	// *PoolConfig until its configuration changes, so the last pool found
	// for it is the one, if the route still matches.
	fast := fastPoolKey{pool: t.Route.Pool, limits: t.Limits, user: t.User, group: t.Group}
	ps.mu.Lock()
	if p := ps.recent[fast]; p != nil && !ps.closed && sameRoute(p.route, t.Route) {
		ps.mu.Unlock()
		return p
	}
	ps.mu.Unlock()
	route, _ := json.Marshal(t.Route) // a TaskRoute always marshals
	key := poolKey{route: string(route), limits: t.Limits, user: t.User, group: t.Group}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return nil
	}
	p := ps.byKey[key]
	defer func() {
		if len(ps.recent) > 1024 {
			clear(ps.recent) // configurations changed often: start over
		}
		ps.recent[fast] = p
	}()
	if p == nil {
		p = &childPool{
			ps: ps, key: key, route: t.Route, conf: *t.Route.Pool, opened: t.queue(),
			spec:  Task{Route: t.Route, Limits: t.Limits, User: t.User, Group: t.Group},
			live:  map[*pooledChild]struct{}{},
			users: map[string]bool{},
		}
		p.stopCtx, p.stopStarts = context.WithCancel(context.Background())
		ps.byKey[key] = p
		if ps.sweeper == nil {
			ps.sweeper = make(chan struct{})
			ps.bg.Add(1)
			go ps.sweep(ps.sweeper)
		}
	}
	return p
}

// sweep stops idle children past poolIdleTimeout or their max age, and
// drops pools left without a child, until stop is closed.
func (ps *pools) sweep(stop chan struct{}) {
	defer ps.bg.Done()
	t := time.NewTicker(ps.sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ps.mu.Lock()
		all := slices.Collect(maps.Values(ps.byKey))
		ps.mu.Unlock()
		now := time.Now()
		for _, p := range all {
			p.mu.Lock()
			keep := p.idle[:0]
			for _, c := range p.idle {
				if now.Sub(c.lastUsed) >= ps.idleTimeout || p.tooOld(c, now) {
					p.retireLocked(c, "idle")
					continue
				}
				keep = append(keep, c)
			}
			clear(p.idle[len(keep):])
			p.idle = keep
			empty := p.emptyLocked()
			p.mu.Unlock()
			if empty {
				ps.mu.Lock()
				if ps.byKey[p.key] == p {
					p.mu.Lock()
					if p.emptyLocked() {
						ps.dropLocked(p)
					}
					p.mu.Unlock()
				}
				ps.mu.Unlock()
			}
		}
	}
}

// dropLocked stops p and removes it from the index. ps.mu and p.mu are
// held.
func (ps *pools) dropLocked(p *childPool) {
	p.stopLocked()
	delete(ps.byKey, p.key)
	maps.DeleteFunc(ps.recent, func(_ fastPoolKey, v *childPool) bool { return v == p })
}

// emptyLocked reports whether the pool has no child and no task on its way
// to one. p.mu is held.
func (p *childPool) emptyLocked() bool {
	return len(p.live) == 0 && p.starting == 0 && p.checkouts == 0
}

// releaseQueue tells every pool that queue no longer uses it (it was
// paused, or it stopped). A pool that no queue uses any more is stopped:
// its idle children now, busy ones when their task ends.
func (ps *pools) releaseQueue(queue string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.byKey {
		p.mu.Lock()
		if p.users[queue] {
			delete(p.users, queue)
			if len(p.users) == 0 {
				ps.dropLocked(p)
			}
		}
		p.mu.Unlock()
	}
}

// close stops every pool and waits until every child is gone. Later pooled
// tasks are aborted.
func (ps *pools) close() {
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		ps.bg.Wait()
		return
	}
	ps.closed = true
	all := slices.Collect(maps.Values(ps.byKey))
	ps.byKey = map[poolKey]*childPool{}
	clear(ps.recent)
	if ps.sweeper != nil {
		close(ps.sweeper)
	}
	ps.mu.Unlock()
	for _, p := range all {
		p.mu.Lock()
		p.stopLocked()
		p.killBusyLocked()
		p.mu.Unlock()
	}
	ps.bg.Wait()
}

// killBusyLocked kills the process groups of children running a task;
// their tasks end as aborted. p.mu is held.
func (p *childPool) killBusyLocked() {
	for c := range p.live {
		if c.busy {
			c.closed.Store(true)
			killGroup(c.pid, syscall.SIGKILL)
		}
	}
}

// stopLocked marks the pool stopped, stops its idle children and its
// starts, and fails its waiting tasks with errPoolStopped (they try a new
// pool); busy children stop when their task ends. p.mu is held.
func (p *childPool) stopLocked() {
	if p.stopped {
		return
	}
	p.stopped = true
	p.stopStarts()
	for _, c := range p.idle {
		p.retireLocked(c, "pool stopped")
	}
	p.idle = nil
	for _, w := range p.waiters {
		w.ch <- childOrError{err: errPoolStopped}
	}
	p.waiters = nil
}

// retireLocked removes c from the pool and stops it in the background.
// p.mu is held.
func (p *childPool) retireLocked(c *pooledChild, why string) {
	p.forgetLocked(c)
	p.ps.bg.Add(1)
	go func() {
		defer p.ps.bg.Done()
		c.stop(p.ps.e.grace, false)
		p.logLeftover(c, why)
	}()
}

// logLeftover logs what c wrote outside any task.
func (p *childPool) logLeftover(c *pooledChild, why string) {
	out, errOut := c.stdout.leftover(), c.stderr.leftover()
	if len(out) == 0 && len(errOut) == 0 {
		return
	}
	p.ps.e.logger.Info("pooled child output outside tasks", "route", p.describe(), "pid", c.pid,
		"stopped", why, "stdout", string(out), "stderr", string(errOut))
}

// describe names the pool's route in logs.
func (p *childPool) describe() string {
	if p.route.Go {
		return "go"
	}
	return strings.Join(p.route.Command, " ")
}

// tooOld reports whether c is past the pool's max_child_age.
func (p *childPool) tooOld(c *pooledChild, now time.Time) bool {
	return p.conf.MaxChildAge > 0 && now.Sub(c.started) >= p.conf.MaxChildAge.Std()
}

// recycleReason says why c must not serve another task, or "" when it may.
// It reads /proc only when the pool has a memory limit.
func (p *childPool) recycleReason(c *pooledChild) string {
	switch {
	case p.conf.MaxTasksPerChild > 0 && c.served >= p.conf.MaxTasksPerChild:
		return fmt.Sprintf("served %d tasks (max_tasks_per_child)", c.served)
	case p.tooOld(c, time.Now()):
		return fmt.Sprintf("older than %s (max_child_age)", p.conf.MaxChildAge.Std())
	case p.conf.MaxMemoryPerChild > 0:
		if rss := c.rss(); rss >= int64(p.conf.MaxMemoryPerChild) {
			return fmt.Sprintf("resident set %s reached max_memory_per_child %s", drover.ByteSize(rss), p.conf.MaxMemoryPerChild)
		}
	}
	return ""
}

// checkin hands c back after a task that ended with a valid result. It
// hands c to the first waiting task, or keeps it for the next one, or stops
// it when it reached a recycling limit (then a replacement starts in the
// background), when the pool holds more children than its size, or when
// the pool was stopped.
func (p *childPool) checkin(c *pooledChild) {
	c.lastUsed = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	c.served++
	c.busy = false
	reason := p.recycleReason(c)
	switch {
	case p.stopped:
		p.retireLocked(c, "pool stopped")
	case reason != "":
		p.ps.e.logger.Debug("recycling pooled child", "route", p.describe(), "pid", c.pid, "reason", reason)
		ahead := c.replacedAhead
		p.retireLocked(c, reason)
		if !ahead || len(p.waiters) > p.starting {
			p.startInBackgroundLocked(childReadyTimeout)
		}
	case len(p.waiters) > 0:
		p.startAheadLocked(c)
		p.handLocked(c)
	case p.size > 0 && len(p.live) > p.size+p.ahead:
		p.retireLocked(c, "more children than the pool's size")
	default:
		p.startAheadLocked(c)
		p.idle = append(p.idle, c)
	}
}

// startAheadLocked starts c's replacement when c is a tenth of
// max_tasks_per_child from its end. p.mu is held.
func (p *childPool) startAheadLocked(c *pooledChild) {
	if m := p.conf.MaxTasksPerChild; !c.replacedAhead && startAheadMargin(m) > 0 && c.served >= m-startAheadMargin(m) {
		c.replacedAhead = true
		p.ahead++
		p.startInBackgroundLocked(childReadyTimeout)
	}
}

// handLocked gives c, which is ready and not busy, to the first waiting
// task, or keeps it idle. p.mu is held.
func (p *childPool) handLocked(c *pooledChild) {
	if len(p.waiters) == 0 {
		p.idle = append(p.idle, c)
		return
	}
	w := p.waiters[0]
	p.waiters[0] = nil
	p.waiters = p.waiters[1:]
	c.busy = true
	w.ch <- childOrError{c: c}
}

// discard forgets c, which was killed or died during a task (its caller
// has stopped it). A task waiting for a child gets a new one.
func (p *childPool) discard(c *pooledChild) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgetLocked(c)
	if len(p.waiters) > p.starting {
		p.startInBackgroundLocked(childReadyTimeout)
	}
}

// forgetLocked removes c from the live set. p.mu is held.
func (p *childPool) forgetLocked(c *pooledChild) {
	if _, ok := p.live[c]; !ok {
		return
	}
	delete(p.live, c)
	if c.replacedAhead {
		p.ahead--
	}
}

// startAheadMargin is how many tasks before max_tasks_per_child a child's
// replacement starts: a tenth of the limit. Children started together
// reach their limit together; without a head start every task would wait
// for a process start at once.
func startAheadMargin(maxTasks int) int { return maxTasks / 10 }

// roomLocked reports whether the pool may start another child. p.mu is
// held.
func (p *childPool) roomLocked() bool {
	return p.size == 0 || len(p.live)+p.starting < p.size+p.ahead
}

// startInBackgroundLocked starts a child, given up after readyWithin
// without its ready frame, that goes to the first waiting task once ready,
// or joins the idle list; a failed start fails the first waiting task with
// its error. It starts nothing when the pool is full or stopped. p.mu is
// held.
func (p *childPool) startInBackgroundLocked(readyWithin time.Duration) {
	if p.stopped || !p.roomLocked() {
		return
	}
	p.starting++
	p.ps.bg.Add(1)
	go func() {
		defer p.ps.bg.Done()
		ctx, cancel := context.WithTimeout(p.stopCtx, readyWithin)
		c, err := p.start(ctx)
		cancel()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.starting--
		switch {
		case err != nil && p.stopped:
		case err != nil:
			p.ps.e.logger.Warn("pooled child did not start", "route", p.describe(), "error", err)
			if len(p.waiters) > 0 {
				w := p.waiters[0]
				p.waiters[0] = nil
				p.waiters = p.waiters[1:]
				w.ch <- childOrError{err: err}
			}
			// The others try again, each with a start of its own: a
			// broken command fails every task, as it would per task.
			if len(p.waiters) > p.starting {
				p.startInBackgroundLocked(readyWithin)
			}
		case p.stopped:
			p.retireLocked(c, "pool stopped")
		case len(p.waiters) > 0:
			c.lastUsed = time.Now()
			p.handLocked(c)
		default:
			// At the cold end of the idle list: a replacement started
			// ahead waits until its predecessor has served its last task.
			c.lastUsed = time.Now()
			p.idle = slices.Insert(p.idle, 0, c)
		}
	}()
}

// checkout returns a ready child for a task of queue: an idle one when no
// task waits before it, else it waits its turn (first come, first served)
// for a child that comes back or that a start (begun for it when the pool
// has room) delivers. It gives up when ctx ends (the error is ctx's cause),
// when cancel is closed (errCancelledWaiting), at deadline (zero: none;
// context.DeadlineExceeded), or with the error of a failed start.
// readyWithin bounds a start begun for it. size is the most children the
// pool keeps (0: no bound).
func (p *childPool) checkout(ctx context.Context, cancel <-chan struct{}, deadline time.Time, readyWithin time.Duration, queue string, size int) (*pooledChild, error) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return nil, errPoolStopped
	}
	p.users[queue] = true
	if size > 0 {
		p.size = size
	}
	for len(p.waiters) == 0 && len(p.idle) > 0 {
		n := len(p.idle)
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		if c.hasExited() || len(c.results) > 0 || p.tooOld(c, time.Now()) {
			// Died while idle, wrote a frame nobody asked for, or aged.
			p.retireLocked(c, "unusable while idle")
			continue
		}
		c.busy = true
		p.mu.Unlock()
		return c, nil
	}
	w := &childWaiter{ch: make(chan childOrError, 1)}
	p.waiters = append(p.waiters, w)
	if len(p.waiters) > p.starting {
		p.startInBackgroundLocked(readyWithin)
	}
	p.checkouts++ // the sweeper keeps a pool that a task waits on
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.checkouts--
		p.mu.Unlock()
	}()

	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	var gaveUp error
	select {
	case r := <-w.ch:
		return r.c, r.err
	case <-ctx.Done():
		gaveUp = context.Cause(ctx)
	case <-cancel:
		gaveUp = errCancelledWaiting
	case <-timeout:
		gaveUp = context.DeadlineExceeded
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.waiters, w); i >= 0 {
		p.waiters = slices.Delete(p.waiters, i, i+1)
		return nil, gaveUp
	}
	// Handed something as it gave up: a child goes to the next task.
	if r := <-w.ch; r.c != nil {
		r.c.busy = false
		p.handLocked(r.c)
	}
	return nil, gaveUp
}

// errPoolStopped: the pool was stopped (no queue uses it any more, or the
// executor was closed).
var errPoolStopped = fmt.Errorf("the pool was stopped (its queues paused or released, or the worker is stopping)")

// errCancelledWaiting: the task was cancelled while it waited for a child.
var errCancelledWaiting = errors.New("cancelled while waiting for a pooled child")

// PoolState is one pool in the worker's state (ctl dump, /debug/state).
type PoolState struct {
	// Queue is the queue whose task opened the pool; it serves every
	// queue of the worker with the same route, limits, user and group.
	Queue string `json:"queue"`
	// Queues is how many queues use the pool: they ran a task on it and
	// have not been paused or stopped since.
	Queues   int               `json:"queues"`
	Route    drover.TaskRoute  `json:"route"`
	Children []PoolChildState  `json:"children"`
	Starting int               `json:"starting,omitempty"`
	Config   drover.PoolConfig `json:"config"`
}

// PoolChildState is one warm child.
type PoolChildState struct {
	PID         int       `json:"pid"`
	Busy        bool      `json:"busy"`
	TasksServed int       `json:"tasks_served"`
	RSSBytes    int64     `json:"rss_bytes"`
	Started     time.Time `json:"started"`
	AgeSeconds  float64   `json:"age_seconds"`
}

// states returns every pool's state, reading each child's RSS from /proc.
func (ps *pools) states() []PoolState {
	ps.mu.Lock()
	all := slices.Collect(maps.Values(ps.byKey))
	ps.mu.Unlock()
	now := time.Now()
	out := make([]PoolState, 0, len(all))
	for _, p := range all {
		st := PoolState{Queue: p.opened, Route: p.route, Config: p.conf}
		p.mu.Lock()
		st.Starting = p.starting
		st.Queues = len(p.users)
		for c := range p.live {
			cs := PoolChildState{PID: c.pid, Busy: c.busy, TasksServed: c.served,
				Started: c.started, AgeSeconds: now.Sub(c.started).Seconds()}
			st.Children = append(st.Children, cs)
		}
		p.mu.Unlock()
		for i := range st.Children {
			st.Children[i].RSSBytes = processRSS(st.Children[i].PID)
		}
		sort.Slice(st.Children, func(i, j int) bool { return st.Children[i].PID < st.Children[j].PID })
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Queue != out[j].Queue {
			return out[i].Queue < out[j].Queue
		}
		return string(mustJSON(out[i].Route)) < string(mustJSON(out[j].Route))
	})
	return out
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
