package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/drover-dev/drover"
)

// Pools of warm children for pooled routes (docs/process-pool.md). A pool
// belongs to one queue and one route (with its limits, user and group); it
// starts a child when a task finds none idle, keeps it for the next task, and
// replaces it when it reaches a recycling limit, dies, breaks the protocol or
// runs past a deadline.

// Pool timing.
const (
	// poolIdleTimeout: a child idle this long is stopped.
	poolIdleTimeout = 5 * time.Minute
	// poolSweepInterval: how often idle children are looked at.
	poolSweepInterval = 30 * time.Second
	// childReadyTimeout bounds a background start (a replacement that no
	// task waits for) until its ready frame.
	childReadyTimeout = time.Minute
)

// poolKey identifies a pool.
type poolKey struct {
	queue       string
	route       string // the route as JSON
	limits      drover.Limits
	user, group string
}

// fastPoolKey finds a pool without encoding the route.
type fastPoolKey struct {
	queue       string
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

// childPool is one route's warm children.
type childPool struct {
	ps    *pools
	key   poolKey
	route drover.TaskRoute
	conf  drover.PoolConfig
	spec  Task // queue, route, limits, user and group of its children

	mu        sync.Mutex
	idle      []*pooledChild // most recently used last
	live      map[*pooledChild]struct{}
	starting  int           // background starts under way
	checkouts int           // tasks in checkout (waiting or starting a child)
	waiting   int           // tasks waiting for a background start
	changed   chan struct{} // closed and replaced when a background start ends
	size      int           // the queue's concurrency at the last task; 0: unbounded
	ahead     int           // live children whose replacement was started ahead (may exceed size)
	stopped   bool
}

func newPools(e *execExecutor) *pools {
	return &pools{e: e, byKey: map[poolKey]*childPool{}, recent: map[fastPoolKey]*childPool{},
		idleTimeout: poolIdleTimeout, sweepEvery: poolSweepInterval}
}

// get returns t's pool, creating it; nil once the pools are closed.
func (ps *pools) get(t *Task) *childPool {
	// Fast path: the queue loop hands every task of a route the same
	// *PoolConfig until its configuration changes, so the last pool found
	// for it is the one, if the route still matches.
	fast := fastPoolKey{queue: t.queue(), pool: t.Route.Pool, limits: t.Limits, user: t.User, group: t.Group}
	ps.mu.Lock()
	if p := ps.recent[fast]; p != nil && !ps.closed && sameRoute(p.route, t.Route) {
		ps.mu.Unlock()
		return p
	}
	ps.mu.Unlock()
	route, _ := json.Marshal(t.Route) // a TaskRoute always marshals
	key := poolKey{queue: t.queue(), route: string(route), limits: t.Limits, user: t.User, group: t.Group}
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
			ps: ps, key: key, route: t.Route, conf: *t.Route.Pool,
			spec:    Task{Queue: key.queue, Route: t.Route, Limits: t.Limits, User: t.User, Group: t.Group},
			live:    map[*pooledChild]struct{}{},
			changed: make(chan struct{}),
		}
		ps.byKey[key] = p
		if ps.sweeper == nil {
			ps.sweeper = make(chan struct{})
			ps.bg.Add(1)
			go ps.sweep(ps.sweeper)
		}
	}
	return p
}

// sweep stops idle children past poolIdleTimeout or their max age, until
// stop is closed.
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
			p.idle = keep
			empty := p.emptyLocked()
			p.mu.Unlock()
			if empty {
				ps.mu.Lock()
				if ps.byKey[p.key] == p {
					p.mu.Lock()
					if p.emptyLocked() {
						p.stopped = true
						delete(ps.byKey, p.key)
						ps.forgetLocked(p)
					}
					p.mu.Unlock()
				}
				ps.mu.Unlock()
			}
		}
	}
}

// forgetLocked drops p from the fast-path index. ps.mu is held.
func (ps *pools) forgetLocked(p *childPool) {
	maps.DeleteFunc(ps.recent, func(_ fastPoolKey, v *childPool) bool { return v == p })
}

// emptyLocked reports whether the pool has no child and no task on its way
// to one. p.mu is held.
func (p *childPool) emptyLocked() bool {
	return len(p.live) == 0 && p.starting == 0 && p.checkouts == 0
}

// releaseQueue stops every pool of queue: idle children now, busy ones when
// their task ends.
func (ps *pools) releaseQueue(queue string) {
	ps.mu.Lock()
	var mine []*childPool
	for k, p := range ps.byKey {
		if k.queue == queue {
			mine = append(mine, p)
			delete(ps.byKey, k)
			ps.forgetLocked(p)
		}
	}
	ps.mu.Unlock()
	for _, p := range mine {
		p.stop()
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
		p.stop()
		p.killBusy()
	}
	ps.bg.Wait()
}

// killBusy kills the process groups of children running a task; their
// tasks end as aborted.
func (p *childPool) killBusy() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.live {
		if c.busy {
			c.closed.Store(true)
			killGroup(c.pid, syscall.SIGKILL)
		}
	}
}

// stop marks the pool stopped and stops its idle children; busy ones stop
// when their task ends.
func (p *childPool) stop() {
	p.mu.Lock()
	p.stopped = true
	for _, c := range p.idle {
		p.retireLocked(c, "pool stopped")
	}
	p.idle = nil
	p.mu.Unlock()
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
	p.ps.e.logger.Info("pooled child output outside tasks", "queue", p.key.queue, "pid", c.pid,
		"stopped", why, "stdout", string(out), "stderr", string(errOut))
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
// keeps c for the next task, or stops it when it reached a recycling limit
// (then a replacement starts in the background), when the pool holds more
// children than the queue's concurrency, or when the pool was stopped.
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
	case p.size > 0 && len(p.live) > p.size+p.ahead:
		p.retireLocked(c, "more children than the queue's concurrency")
	case reason != "":
		p.ps.e.logger.Debug("recycling pooled child", "queue", p.key.queue, "pid", c.pid, "reason", reason)
		ahead := c.replacedAhead
		p.retireLocked(c, reason)
		if !ahead {
			p.startInBackgroundLocked()
		}
	default:
		if m := p.conf.MaxTasksPerChild; !c.replacedAhead && startAheadMargin(m) > 0 && c.served >= m-startAheadMargin(m) {
			c.replacedAhead = true
			p.ahead++
			p.startInBackgroundLocked()
		}
		p.idle = append(p.idle, c)
	}
}

// discard forgets c, which was killed or died during a task (its caller
// has stopped it).
func (p *childPool) discard(c *pooledChild) {
	p.mu.Lock()
	p.forgetLocked(c)
	p.mu.Unlock()
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

// startInBackgroundLocked starts a replacement child that joins the idle
// list once ready, so the next task does not wait for a whole start. p.mu
// is held.
func (p *childPool) startInBackgroundLocked() {
	if p.stopped || (p.size > 0 && len(p.live)+p.starting >= p.size+p.ahead) {
		return
	}
	p.starting++
	p.ps.bg.Add(1)
	go func() {
		defer p.ps.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), childReadyTimeout)
		c, err := p.start(ctx)
		cancel()
		p.mu.Lock()
		p.starting--
		close(p.changed)
		p.changed = make(chan struct{})
		if err != nil {
			p.mu.Unlock()
			p.ps.e.logger.Warn("pooled child did not start", "queue", p.key.queue, "error", err)
			return
		}
		if p.stopped {
			p.retireLocked(c, "pool stopped")
		} else {
			// At the cold end of the idle list: a replacement started
			// ahead waits until its predecessor has served its last task.
			c.lastUsed = time.Now()
			p.idle = slices.Insert(p.idle, 0, c)
		}
		p.mu.Unlock()
	}()
}

// checkout returns a ready child for a task: an idle one, one that a
// background start is about to deliver, or a new one. It gives up when ctx
// ends or at deadline (zero: none), with the error of the last start.
func (p *childPool) checkout(ctx context.Context, deadline time.Time, size int) (*pooledChild, error) {
	p.mu.Lock()
	p.checkouts++ // the sweeper keeps a pool that a task is about to use
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.checkouts--
		p.mu.Unlock()
	}()
	for {
		p.mu.Lock()
		if size > 0 {
			p.size = size
		}
		if p.stopped {
			p.mu.Unlock()
			return nil, errPoolStopped
		}
		if n := len(p.idle); n > 0 {
			c := p.idle[n-1]
			p.idle = p.idle[:n-1]
			if c.hasExited() || len(c.results) > 0 || p.tooOld(c, time.Now()) {
				// Died while idle, wrote a frame nobody asked for, or aged.
				p.retireLocked(c, "unusable while idle")
				p.mu.Unlock()
				continue
			}
			c.busy = true
			p.mu.Unlock()
			return c, nil
		}
		if p.starting > p.waiting {
			p.waiting++
			changed := p.changed
			p.mu.Unlock()
			err := waitUntil(ctx, deadline, changed)
			p.mu.Lock()
			p.waiting--
			p.mu.Unlock()
			if err != nil {
				return nil, err
			}
			continue
		}
		p.mu.Unlock()
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if !deadline.IsZero() {
			sctx, cancel = context.WithDeadline(ctx, deadline)
		}
		c, err := p.start(sctx)
		cancel()
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		c.busy = true
		if p.stopped {
			p.retireLocked(c, "pool stopped")
			p.mu.Unlock()
			return nil, errPoolStopped
		}
		p.mu.Unlock()
		return c, nil
	}
}

// errPoolStopped: the pool was stopped (queue released, executor closed).
var errPoolStopped = fmt.Errorf("the pool was stopped (queue paused or released, or the worker is stopping)")

// waitUntil waits for ch, ctx or the deadline.
func waitUntil(ctx context.Context, deadline time.Time, ch <-chan struct{}) error {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-timeout:
		return context.DeadlineExceeded
	}
}

// PoolState is one pool in the worker's state (ctl dump, /debug/state).
type PoolState struct {
	Queue    string            `json:"queue"`
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
		st := PoolState{Queue: p.key.queue, Route: p.route, Config: p.conf}
		p.mu.Lock()
		st.Starting = p.starting
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
