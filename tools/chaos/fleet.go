package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drover-dev/drover/internal/testing/proxy"
)

// fleet is the run's drover processes: workers, each talking to every
// ZooKeeper node through a proxy of its own (so that its links can be cut),
// and scheduler candidates talking to the ensemble directly.
type fleet struct {
	bin        string
	dir        string
	workers    []*process
	schedulers []*process

	mu    sync.Mutex
	lives []life
}

// life is one process's lifetime, kept in the run record for debugging.
type life struct {
	Name  string    `json:"name"`
	PID   int       `json:"pid"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
	Exit  string    `json:"exit,omitempty"`
}

// process is one `drover worker` or `drover scheduler`, started again under
// the same name and settings after a fault.
type process struct {
	f       *fleet
	name    string
	command string // "worker" or "scheduler"
	env     []string
	admin   string         // admin HTTP address; "" for a scheduler
	proxies []*proxy.Proxy // a worker's links to the ZooKeeper nodes
	redis   *proxy.Proxy   // a worker's link to Redis

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// fleetSettings are the settings every process shares.
type fleetSettings struct {
	zkServers      []string
	redisAddr      string
	sessionTimeout time.Duration
	// sentinels: Redis is a Sentinel deployment (sentinel.go); the
	// schedulers use them, the workers their proxy to the master. durable
	// is redis.durable.mode ("on" or "off") for every process.
	sentinels []string
	durable   string
}

// newFleet prepares (does not start) workers and schedulers.
func newFleet(bin, dir string, o options, s fleetSettings) (*fleet, error) {
	f := &fleet{bin: bin, dir: dir}
	base := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DROVER_") {
			base = append(base, kv)
		}
	}
	base = append(base,
		"DROVER_ZOOKEEPER_ROOT="+zkRoot,
		"DROVER_ZOOKEEPER_SESSION_TIMEOUT="+s.sessionTimeout.String(),
		"DROVER_REDIS_PREFIX="+redisPrefix,
		"DROVER_WORKER_SETTLE=250ms",
		// Longer than the longest task (2 session timeouts): a graceful
		// stop kills nothing, so a kill or a repeat after one is a
		// violation (issue 29).
		"DROVER_WORKER_DRAIN_TIMEOUT="+drainTimeout(s.sessionTimeout).String(),
		// About a session timeout: a redis-cut worker gives its queues up.
		"DROVER_WORKER_REDIS_GIVEUP_AFTER="+redisGiveUpAfter(s.sessionTimeout).String(),
		"DROVER_LOG_LEVEL=info",
	)
	if s.durable != "" {
		base = append(base, "DROVER_REDIS_DURABLE_MODE="+s.durable)
	}
	for i := 1; i <= o.Workers; i++ {
		p := &process{f: f, name: fmt.Sprintf("w%d", i), command: "worker"}
		var addrs []string
		for _, zk := range s.zkServers {
			px, err := proxy.New(zk)
			if err != nil {
				f.closeProxies()
				return nil, err
			}
			p.proxies = append(p.proxies, px)
			addrs = append(addrs, px.Addr)
		}
		rpx, err := proxy.New(s.redisAddr)
		if err != nil {
			f.closeProxies()
			return nil, err
		}
		p.redis = rpx
		port, err := freePort()
		if err != nil {
			f.closeProxies()
			return nil, err
		}
		p.admin = fmt.Sprintf("127.0.0.1:%d", port)
		p.env = append(append([]string(nil), base...),
			"DROVER_ZOOKEEPER_SERVERS="+strings.Join(addrs, ","),
			"DROVER_WORKER_NAME="+p.name,
			"DROVER_WORKER_ADMIN_ADDR="+p.admin,
			"DROVER_WORKER_CAPACITY=16",
			"DROVER_REDIS_ADDRS="+rpx.Addr, // through its own proxy: redis-cut
		)
		f.workers = append(f.workers, p)
	}
	for i := 1; i <= o.Schedulers; i++ {
		p := &process{f: f, name: fmt.Sprintf("s%d", i), command: "scheduler"}
		redisEnv := []string{"DROVER_REDIS_ADDRS=" + s.redisAddr}
		if len(s.sentinels) > 0 {
			redisEnv = []string{"DROVER_REDIS_ADDRS=" + strings.Join(s.sentinels, ","), "DROVER_REDIS_MASTER_NAME=" + sentinelMaster}
		}
		p.env = append(append(append([]string(nil), base...), redisEnv...),
			"DROVER_ZOOKEEPER_SERVERS="+strings.Join(s.zkServers, ","),
			"DROVER_WORKER_NAME="+p.name,
			"DROVER_SCHEDULER_ADMIN_ADDR=127.0.0.1:0", // its own port: the default 9091 would collide
		)
		f.schedulers = append(f.schedulers, p)
	}
	return f, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// all returns every process.
func (f *fleet) all() []*process {
	return append(append([]*process(nil), f.workers...), f.schedulers...)
}

// byName returns the process called name, or nil.
func (f *fleet) byName(name string) *process {
	for _, p := range f.all() {
		if p.name == name {
			return p
		}
	}
	return nil
}

// workerPIDs returns the pids of the running workers.
func (f *fleet) workerPIDs() []int {
	var out []int
	for _, p := range f.workers {
		if pid := p.pid(); pid != 0 {
			out = append(out, pid)
		}
	}
	return out
}

// killAll kills every process and closes the proxies.
func (f *fleet) killAll() {
	for _, p := range f.all() {
		p.kill()
	}
	f.closeProxies()
}

func (f *fleet) closeProxies() {
	for _, p := range f.workers {
		for _, px := range p.proxies {
			px.Close()
		}
		if p.redis != nil {
			p.redis.Close()
		}
	}
}

// drainTimeout is the workers' drain_timeout: past the longest task (two
// session timeouts) with room to commit.
func drainTimeout(session time.Duration) time.Duration { return 3*session + 5*time.Second }

func (f *fleet) record(l life) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l.End.IsZero() {
		f.lives = append(f.lives, l)
		return
	}
	for i := range f.lives {
		if f.lives[i].PID == l.PID && f.lives[i].End.IsZero() {
			f.lives[i].End, f.lives[i].Exit = l.End, l.Exit
		}
	}
}

func (f *fleet) lifetimes() []life {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]life(nil), f.lives...)
}

// start starts the process; it fails if it runs already.
func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.name)
	}
	out, err := os.OpenFile(filepath.Join(p.f.dir, p.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: open log: %w", p.name, err)
	}
	cmd := exec.Command(p.f.bin, p.command)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = out, out
	// Not its own process group: a signal to the worker's pid reaches the
	// worker only; its tasks run in groups of their own and die with it
	// (their Pdeathsig), as in production.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("%s: start %s %s: %w", p.name, p.f.bin, p.command, err)
	}
	done := make(chan struct{})
	pid := cmd.Process.Pid
	p.f.record(life{Name: p.name, PID: pid, Start: time.Now()})
	go func() {
		err := cmd.Wait()
		out.Close()
		exit := "exit 0"
		if err != nil {
			exit = err.Error()
		}
		p.f.record(life{Name: p.name, PID: pid, End: time.Now(), Exit: exit})
		p.mu.Lock()
		if p.cmd == cmd {
			p.cmd = nil
		}
		p.mu.Unlock()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// pid returns the running process's id, or 0.
func (p *process) pid() int {
	if cmd, _ := p.current(); cmd != nil {
		return cmd.Process.Pid
	}
	return 0
}

// current returns the running command and its done channel (nil when not
// running).
func (p *process) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.done
}

// signal sends sig to the process (not its tasks).
func (p *process) signal(sig syscall.Signal) error {
	cmd, _ := p.current()
	if cmd == nil {
		return fmt.Errorf("%s: not running", p.name)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s: send %v: %w", p.name, sig, err)
	}
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill() {
	cmd, done := p.current()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// terminate sends SIGTERM and waits up to bound for the exit, then kills.
// It reports whether the process exited by itself.
func (p *process) terminate(bound time.Duration) bool {
	cmd, done := p.current()
	if cmd == nil {
		return true
	}
	cmd.Process.Signal(syscall.SIGCONT) // a stopped process cannot exit
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return true
	case <-time.After(bound):
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return false
	}
}

// waitReady polls a worker's /readyz (a session and a member node) until it
// answers 200, bound passes or ctx ends. A scheduler has no admin address:
// it is ready once started.
func (p *process) waitReady(ctx context.Context, bound time.Duration) error {
	if p.admin == "" {
		return nil
	}
	client := http.Client{Timeout: time.Second}
	deadline := time.Now().Add(bound)
	for {
		resp, err := client.Get("http://" + p.admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not ready after %s", p.name, bound)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cutLinks partitions a worker from every ZooKeeper node: blackhole keeps
// the connections open and silent, otherwise they are reset.
func (p *process) cutLinks(blackhole bool) {
	for _, px := range p.proxies {
		if blackhole {
			px.Blackhole()
		} else {
			px.Cut()
		}
	}
}

// cutRedis partitions a worker from Redis only, as cutLinks does.
func (p *process) cutRedis(blackhole bool) {
	if blackhole {
		p.redis.Blackhole()
	} else {
		p.redis.Cut()
	}
}

// restoreLinks ends a partition.
func (p *process) restoreLinks() {
	for _, px := range p.proxies {
		px.Restore()
	}
	p.redis.Restore()
}

// redisGiveUpAfter is the workers' redis_giveup_after in a run whose
// session timeout is sessionTimeout.
func redisGiveUpAfter(sessionTimeout time.Duration) time.Duration {
	return max(sessionTimeout, time.Second)
}
