package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/tools/fleetbench"
)

// memoryResult is one `drover worker` process owning many idle queues.
type memoryResult struct {
	Variant       string        `json:"variant"`
	Queues        int           `json:"queues"`
	OwnAll        time.Duration `json:"own_all_ns"` // from start until it runs every queue
	RSS           int64         `json:"rss_bytes"`  // VmRSS after idling
	HWM           int64         `json:"hwm_bytes"`  // VmHWM: peak RSS
	Threads       int64         `json:"threads"`
	Goroutines    int64         `json:"goroutines"`
	HeapInuse     int64         `json:"heap_inuse"`
	IdleRedisCmds float64       `json:"idle_redis_cmds_per_s"` // Redis commands/s while idle
	IdleCPU       float64       `json:"idle_cpu_percent"`      // of one core, while idle
	Error         string        `json:"error,omitempty"`
}

// runMemory builds the drover binary from repo, starts `drover worker` as
// the only member of a fresh fleet with `queues` queues and measures it
// once it runs them all and has idled for a while.
func runMemory(ctx context.Context, srv *servers, repo string, queues int, v memoryVariant) *memoryResult {
	r := &memoryResult{Variant: v.Name, Queues: queues}
	if err := runMemoryInto(ctx, srv, repo, v, r); err != nil {
		r.Error = err.Error()
	}
	return r
}

// memoryVariant is one configuration of the measured worker.
type memoryVariant struct {
	Name string
	Env  []string // extra DROVER_* settings
}

func runMemoryInto(ctx context.Context, srv *servers, repo string, v memoryVariant, r *memoryResult) error {
	bin := filepath.Join(srv.dir, "drover")
	if _, err := os.Stat(bin); err != nil {
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/drover")
		build.Dir = repo
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build drover: %v: %s", err, out)
		}
	}
	srv.memoryRuns++
	root := fmt.Sprintf("/bench/memory-%d", srv.memoryRuns)
	obs, err := srv.connectZK(ctx, root, "", 10*time.Second)
	if err != nil {
		return err
	}
	defer obs.Close()
	if err := fanOut(ctx, r.Queues, 32, func(i int) error {
		return obs.Queues().Create(ctx, drover.QueueConfig{Name: queueName(i), Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}})
	}); err != nil {
		return fmt.Errorf("create queues: %w", err)
	}
	admin, err := freeAddr()
	if err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(srv.dir, "worker.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "worker")
	cmd.Env = append(os.Environ(),
		"DROVER_ZOOKEEPER_SERVERS="+srv.zk.Addr, "DROVER_ZOOKEEPER_ROOT="+root,
		"DROVER_REDIS_ADDRS="+srv.redis.Addr, "DROVER_REDIS_PREFIX=mem",
		"DROVER_WORKER_NAME=mem", "DROVER_WORKER_ADMIN_ADDR="+admin, "DROVER_LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, v.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start drover worker: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}()

	for {
		n, err := ownedQueues(admin)
		if err == nil && n == r.Queues {
			break
		}
		select {
		case <-exited:
			return fmt.Errorf("drover worker exited; log %s", filepath.Join(srv.dir, "worker.log"))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(start) > 3*time.Minute {
			return fmt.Errorf("drover worker runs %d of %d queues after 3m (%v)", n, r.Queues, err)
		}
	}
	r.OwnAll = time.Since(start)

	// Idle: let start-up garbage go, then measure over 10 s.
	time.Sleep(3 * time.Second)
	rdb := srv.redisClient()
	defer rdb.Close()
	// sample reads Redis's command count and the worker's CPU time.
	sample := func() (cmds int64, cpu time.Duration, err error) {
		if cmds, err = redisCommands(ctx, rdb); err != nil {
			return 0, 0, err
		}
		cpu, err = fleetbench.CPUTime(cmd.Process.Pid)
		return cmds, cpu, err
	}
	cmds0, cpu0, err := sample()
	if err != nil {
		return err
	}
	const idle = 10 * time.Second
	time.Sleep(idle)
	cmds1, cpu1, err := sample()
	if err != nil {
		return err
	}
	r.IdleRedisCmds = float64(cmds1-cmds0-1) / idle.Seconds() // minus our own INFO
	r.IdleCPU = 100 * (cpu1 - cpu0).Seconds() / idle.Seconds()
	st, err := procStatus(cmd.Process.Pid)
	if err != nil {
		return err
	}
	r.RSS, r.HWM, r.Threads = st["VmRSS"], st["VmHWM"], st["Threads"]
	r.Goroutines, _ = pprofTotal(admin)
	r.HeapInuse, _ = pprofMemStat(admin, "HeapInuse")
	if p := os.Getenv("BENCH_HEAP_PROFILE"); p != "" {
		if b, err := httpGet("http://" + admin + "/debug/pprof/heap"); err == nil {
			os.WriteFile(p, b, 0o644)
		}
	}
	return nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// ownedQueues asks a worker's /debug/state how many queues it runs.
func ownedQueues(admin string) (int, error) {
	resp, err := http.Get("http://" + admin + "/debug/state")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var st struct {
		Worker struct {
			Queues []json.RawMessage `json:"queues"`
		} `json:"worker"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, err
	}
	return len(st.Worker.Queues), nil
}

// procStatus reads the numeric fields of /proc/<pid>/status; kB values are
// returned in bytes.
func procStatus(pid int) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		out[k] = n
	}
	return out, nil
}

func redisCommands(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "stats").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO stats has no total_commands_processed")
}

// pprofTotal reads the goroutine count from /debug/pprof/goroutine.
func pprofTotal(admin string) (int64, error) {
	b, err := httpGet("http://" + admin + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	_, n, ok := strings.Cut(line, "total ")
	if !ok {
		return 0, fmt.Errorf("no goroutine total")
	}
	return strconv.ParseInt(strings.TrimSpace(n), 10, 64)
}

// pprofMemStat reads one runtime.MemStats field from /debug/pprof/heap.
func pprofMemStat(admin, field string) (int64, error) {
	b, err := httpGet("http://" + admin + "/debug/pprof/heap?debug=1")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "# "+field+" = "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in the heap profile", field)
}

func httpGet(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
