package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/testing/proxy"
)

// scaleConfig sizes the scale section.
type scaleConfig struct {
	Sizes          [][2]int      // {members, queues} pairs
	SessionTimeout time.Duration // of every member
	// Far is one more size, {0, 0} for none, run under FarBudget (queue
	// creation included) to see how far the coordination goes: its figures,
	// or where and why it stops.
	Far       [2]int
	FarBudget time.Duration
	// StartLimit bounds the wait for a start to converge (within the far
	// size's budget). Default 5 minutes.
	StartLimit time.Duration
}

// scaleResult is one fleet size's figures.
type scaleResult struct {
	Members        int           `json:"members"`
	Queues         int           `json:"queues"`
	SessionTimeout time.Duration `json:"session_timeout_ns"`
	CreateQueues   time.Duration `json:"create_queues_ns"`
	Start          time.Duration `json:"start_converge_ns"`
	Join           time.Duration `json:"join_converge_ns"`
	Leave          time.Duration `json:"leave_converge_ns"`
	Crash          time.Duration `json:"crash_converge_ns"`
	LeaveRequests  proxy.Counts  `json:"leave_requests"`
	// JoinReadRatio is, over the members, the largest ratio of the bytes a
	// member read from /assignment nodes during the join to the size of its
	// share after it; JoinedReadRatio is the joining member's.
	JoinReadRatio   float64 `json:"join_read_ratio"`
	JoinedReadRatio float64 `json:"joined_read_ratio"`
	// MaxRequest and MaxResponse are the largest ZooKeeper frames any
	// member sent or received over the whole run (bytes).
	MaxRequest    int64        `json:"max_request_bytes"`
	MaxResponse   int64        `json:"max_response_bytes"`
	StartRequests proxy.Counts `json:"start_requests"`
	JoinRequests  proxy.Counts `json:"join_requests"`
	CrashRequests proxy.Counts `json:"crash_requests"`
	// Queues moved by the assignments of each event (handovers).
	JoinMoved      int64 `json:"join_moved"`
	LeaveMoved     int64 `json:"leave_moved"`
	CrashMoved     int64 `json:"crash_moved"`
	JoinRebalances int64 `json:"join_rebalances"`
	CrashRebals    int64 `json:"crash_rebalances"`
	// CPU each event took, of this process (the members, the observer,
	// the proxies) and of the ZooKeeper server: on a shared machine the
	// robust figure where wall times are not.
	StartCPU     eventCPU `json:"start_cpu"`
	JoinCPU      eventCPU `json:"join_cpu"`
	LeaveCPU     eventCPU `json:"leave_cpu"`
	CrashCPU     eventCPU `json:"crash_cpu"`
	Violations   int      `json:"ownership_violations"`
	LostSessions []string `json:"lost_sessions,omitempty"` // members whose session ended by itself
	Goroutines   int      `json:"goroutines_after_start"`
	HeapInuse    uint64   `json:"heap_inuse_after_start"`
	ZKWatches    int64    `json:"zk_watch_count"`
	ZKZnodes     int64    `json:"zk_znode_count"`
	Error        string   `json:"error,omitempty"`
	// Budget bounds the whole size (the far size only); AssignedAt is when
	// the observer first saw every queue assigned, from the start of the
	// members.
	Budget     time.Duration `json:"budget_ns,omitempty"`
	AssignedAt time.Duration `json:"assigned_ns,omitempty"`
	// When the start did not converge: how long it ran, and how many
	// queues were run by then.
	StartStoppedAfter time.Duration `json:"start_stopped_after_ns,omitempty"`
	RunAtStop         int           `json:"run_at_stop,omitempty"`
}

func runScale(ctx context.Context, srv *servers, cfg scaleConfig, progress io.Writer) ([]*scaleResult, *scaleResult) {
	var out []*scaleResult
	for i, size := range cfg.Sizes {
		r := &scaleResult{Members: size[0], Queues: size[1], SessionTimeout: cfg.SessionTimeout}
		root := fmt.Sprintf("/bench/scale-%d-%dx%d", i, size[0], size[1])
		if err := runScaleSize(ctx, srv, root, r, cfg.StartLimit, progress); err != nil {
			r.Error = err.Error()
			fmt.Fprintf(progress, "  scale %d×%d: %v\n", size[0], size[1], err)
		}
		out = append(out, r)
		runtime.GC()
	}
	if cfg.Far[0] == 0 || ctx.Err() != nil {
		return out, nil
	}
	far := &scaleResult{Members: cfg.Far[0], Queues: cfg.Far[1], SessionTimeout: cfg.SessionTimeout, Budget: cfg.FarBudget}
	root := fmt.Sprintf("/bench/scale-far-%dx%d", far.Members, far.Queues)
	fmt.Fprintf(progress, "  scale %d×%d (how far it goes, budget %s)…\n", far.Members, far.Queues, far.Budget)
	if err := runScaleSize(ctx, srv, root, far, cfg.StartLimit, progress); err != nil {
		far.Error = err.Error()
		fmt.Fprintf(progress, "  scale %d×%d stopped: %v\n", far.Members, far.Queues, err)
	}
	runtime.GC()
	return out, far
}

// firstSize reads one "100x1000000"; {0, 0} when empty or invalid.
func firstSize(s string) [2]int {
	if sizes := parseSizes(s); len(sizes) > 0 {
		return sizes[0]
	}
	return [2]int{}
}

func runScaleSize(ctx context.Context, srv *servers, root string, r *scaleResult, limit time.Duration, progress io.Writer) error {
	if limit <= 0 {
		limit = 5 * time.Minute
	}
	t := time.Now()
	// within bounds a wait by the size's budget, if it has one.
	within := func(d time.Duration) time.Duration { return d }
	if r.Budget > 0 {
		deadline := t.Add(r.Budget)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
		within = func(d time.Duration) time.Duration { return max(0, min(d, time.Until(deadline))) }
	}
	f, err := newFleet(ctx, srv, root, r.Queues, r.SessionTimeout)
	if err != nil {
		return fmt.Errorf("after %s: %w", time.Since(t).Round(time.Second), err)
	}
	defer f.close()
	defer func() {
		f.mu.Lock()
		r.LostSessions = append([]string(nil), f.lost...)
		f.mu.Unlock()
		c := f.counts()
		r.MaxRequest, r.MaxResponse = c.MaxRequest, c.MaxResponse
	}()
	r.CreateQueues = time.Since(t)

	// Start: every member at once (16 connecting at a time).
	t0 := time.Now()
	c0 := f.counts()
	ops0 := f.opCounts()
	endProfile := profileEvent(r, "start", f, &r.StartCPU)
	if err := fanOut(ctx, r.Members, 16, func(i int) error {
		_, err := f.start(ctx, fmt.Sprintf("m%03d", i))
		return err
	}); err != nil {
		endProfile()
		return fmt.Errorf("start members: %w", err)
	}
	r.Start, err = f.waitConverged(ctx, t0, within(limit))
	endProfile()
	if at := f.assignedAt.Load(); at != nil {
		r.AssignedAt = at.Sub(t0)
	}
	if err != nil {
		r.StartStoppedAfter = time.Since(t0)
		f.log.mu.Lock()
		r.RunAtStop = len(f.log.owner)
		f.log.mu.Unlock()
		return fmt.Errorf("start: %w", err)
	}
	r.StartRequests = f.counts().Sub(c0)
	printOps(progress, "start", ops0, f.opCounts())
	fmt.Fprintf(progress, "    start requests: %s\n", countsLine(r.StartRequests))
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	r.HeapInuse, r.Goroutines = ms.HeapInuse, runtime.NumGoroutine()
	if st, err := mntr(srv.zk.Addr); err == nil {
		r.ZKWatches, r.ZKZnodes = st["zk_watch_count"], st["zk_znode_count"]
	}
	fmt.Fprintf(progress, "  scale %d×%d: start converged in %s (%s)\n", r.Members, r.Queues, r.Start.Round(time.Millisecond), r.StartCPU)

	// Join: one more member.
	settle(f)
	gen := f.generation()
	c0 = f.counts()
	per0 := f.memberCounts()
	ops0 = f.opCounts()
	moved0 := f.moved.Load()
	t0 = time.Now()
	debugEvent("join")
	endProfile = profileEvent(r, "join", f, &r.JoinCPU)
	if _, err := f.start(ctx, "m-joined"); err != nil {
		return fmt.Errorf("join: %w", err)
	}
	debugEvent("joined member node created")
	r.Join, err = f.waitConverged(ctx, t0, within(2*time.Minute))
	endProfile()
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	settle(f)
	r.JoinRequests = f.counts().Sub(c0)
	r.JoinMoved = f.moved.Load() - moved0
	printOps(progress, "join", ops0, f.opCounts())
	fmt.Fprintf(progress, "    join requests: %s\n", countsLine(r.JoinRequests))
	r.JoinRebalances = f.generation() - gen
	shares := f.shareBytes()
	for name, c := range f.memberCounts() {
		read := c.PrefixReadBytes - per0[name].PrefixReadBytes
		if shares[name] == 0 || read == 0 {
			continue
		}
		ratio := float64(read) / float64(shares[name])
		r.JoinReadRatio = max(r.JoinReadRatio, ratio)
		if name == "m-joined" {
			r.JoinedReadRatio = ratio
		}
	}
	fmt.Fprintf(progress, "  scale %d×%d: join converged in %s (%s; %s)\n", r.Members, r.Queues, r.Join.Round(time.Millisecond), r.JoinCPU, f.observed(t0))

	// Planned leave: a member that is not the rebalance leader shuts down.
	leader, err := f.leader(ctx)
	if err != nil {
		return fmt.Errorf("leave: find the leader: %w", err)
	}
	leaving := ""
	f.mu.Lock()
	for name := range f.members {
		if name != leader && name != "m-joined" && (leaving == "" || name > leaving) {
			leaving = name
		}
	}
	f.mu.Unlock()
	if leaving != "" {
		c0 = f.counts()
		ops0 = f.opCounts()
		moved0 = f.moved.Load()
		t0 = time.Now()
		debugEvent("leave")
		endProfile = profileEvent(r, "leave", f, &r.LeaveCPU)
		f.leave(ctx, leaving)
		r.Leave, err = f.waitConverged(ctx, t0, within(2*time.Minute))
		endProfile()
		if err != nil {
			return fmt.Errorf("leave: %w", err)
		}
		settle(f)
		r.LeaveRequests = f.counts().Sub(c0)
		r.LeaveMoved = f.moved.Load() - moved0
		printOps(progress, "leave", ops0, f.opCounts())
		fmt.Fprintf(progress, "    leave requests: %s\n", countsLine(r.LeaveRequests))
		fmt.Fprintf(progress, "  scale %d×%d: leave converged in %s (%s; %s)\n", r.Members, r.Queues, r.Leave.Round(time.Millisecond), r.LeaveCPU, f.observed(t0))
	}

	// Crash: a member that is not the rebalance leader is cut off.
	if leader, err = f.leader(ctx); err != nil {
		return fmt.Errorf("crash: find the leader: %w", err)
	}
	victim := ""
	f.mu.Lock()
	for name := range f.members {
		if name != leader && name != "m-joined" && name != leaving && (victim == "" || name < victim) {
			victim = name
		}
	}
	f.mu.Unlock()
	if victim == "" {
		return fmt.Errorf("crash: no member other than the leader is live")
	}
	gen = f.generation()
	c0 = f.counts()
	ops0 = f.opCounts()
	moved0 = f.moved.Load()
	t0 = time.Now()
	debugEvent("crash")
	endProfile = profileEvent(r, "crash", f, &r.CrashCPU)
	f.crash(victim)
	r.Crash, err = f.waitConverged(ctx, t0, within(r.SessionTimeout+2*time.Minute))
	endProfile()
	if err != nil {
		return fmt.Errorf("crash: %w", err)
	}
	settle(f)
	r.CrashRequests = f.counts().Sub(c0)
	r.CrashMoved = f.moved.Load() - moved0
	printOps(progress, "crash", ops0, f.opCounts())
	fmt.Fprintf(progress, "    crash requests: %s\n", countsLine(r.CrashRequests))
	r.CrashRebals = f.generation() - gen
	fmt.Fprintf(progress, "  scale %d×%d: crash converged in %s (%s; %s)\n", r.Members, r.Queues, r.Crash.Round(time.Millisecond), r.CrashCPU, f.observed(t0))
	f.log.mu.Lock()
	r.Violations = f.log.violations
	f.log.mu.Unlock()
	return nil
}

// profileEvent starts, with BENCH_SCALE_PROFILE=<dir>, a CPU profile of
// this process (every member, the observer and the bench's polling) for
// one event of a size, written to <dir>/<members>x<queues>-<event>.prof by
// the function it returns; without it, it does nothing.
func profileEvent(r *scaleResult, event string, f *fleet, into *eventCPU) func() {
	pid := f.srv.zk.PID()
	c0, z0 := readCPU().self, procCPU(pid)
	f.reached = nil
	measured := func() {
		// Up to the instant the event converged, when it did
		// (fleet.converged), not the check's walk after it.
		now := f.snapshot()
		if at := f.reached; at != nil {
			now = *at
		}
		into.Members = now.members - c0
		into.ZooKeeper = now.zook - z0
	}
	dir := os.Getenv("BENCH_SCALE_PROFILE")
	if dir == "" {
		return measured
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "BENCH_SCALE_PROFILE: %v\n", err)
		return measured
	}
	out, err := os.Create(filepath.Join(dir, fmt.Sprintf("%dx%d-%s.prof", r.Members, r.Queues, event)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "BENCH_SCALE_PROFILE: %v\n", err)
		return measured
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		fmt.Fprintf(os.Stderr, "BENCH_SCALE_PROFILE: %v\n", err)
		return measured
	}
	return func() {
		measured()
		pprof.StopCPUProfile()
		out.Close()
	}
}

// eventCPU is the CPU time one event took.
type eventCPU struct {
	Members   time.Duration `json:"members_ns"`   // this process
	ZooKeeper time.Duration `json:"zookeeper_ns"` // the server
}

func (c eventCPU) String() string {
	return fmt.Sprintf("CPU: members %.1f s, ZooKeeper %.1f s", c.Members.Seconds(), c.ZooKeeper.Seconds())
}

// procCPU is process pid's CPU time (user + system) from /proc, 0 when it
// cannot be read.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (in parentheses, which may hold spaces):
	// utime and stime are the 14th and 15th of the whole line.
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+st) * time.Second / 100 // clock ticks (USER_HZ 100)
}

// settle waits until ownership has not changed for a second, so that the
// request counts of one event do not include the tail of the previous one.
func settle(f *fleet) {
	ops0 := f.opCounts()
	t0 := time.Now()
	defer func() {
		debugOps(fmt.Sprintf("settle (%s)", time.Since(t0).Round(time.Millisecond)), ops0, f.opCounts())
	}()
	last := f.log.changes.Load()
	quiet := time.Now()
	for time.Since(quiet) < time.Second {
		time.Sleep(100 * time.Millisecond)
		if n := f.log.changes.Load(); n != last {
			last, quiet = n, time.Now()
		}
	}
}

func (f *fleet) generation() int64 {
	if a := f.assign.Load(); a != nil {
		return a.Generation
	}
	return 0
}

// mntr asks a ZooKeeper server for its monitoring figures (the mntr
// four-letter word) and returns the numeric ones.
func mntr(addr string) (map[string]int64, error) {
	st, err := mntrStrings(addr)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for k, v := range st {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, nil
}

// mntrStrings returns every field of mntr.
func mntrStrings(addr string) (map[string]string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("mntr")); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "\t"); ok {
			out[k] = v
		}
	}
	return out, nil
}

// parseSizes reads "10x1000,100x10000".
func parseSizes(s string) [][2]int {
	var out [][2]int
	for _, p := range strings.Split(s, ",") {
		m, q, ok := strings.Cut(strings.TrimSpace(p), "x")
		if !ok {
			continue
		}
		mi, err1 := strconv.Atoi(m)
		qi, err2 := strconv.Atoi(q)
		if err1 == nil && err2 == nil {
			out = append(out, [2]int{mi, qi})
		}
	}
	return out
}
