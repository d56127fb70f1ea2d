package fleetbench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/proxy"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// The drover binary under test, built once per test binary with the
// bench-only handlers (cmd/drover/bench_handlers.go).
var (
	buildOnce sync.Once
	droverBin string
	buildErr  error
)

func buildDrover(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "drover-fleetbench-bin-")
		if err != nil {
			buildErr = err
			return
		}
		droverBin = filepath.Join(dir, "drover")
		out, err := exec.Command("go", "build", "-tags", "droverbench", "-o", droverBin, "../../cmd/drover").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build -tags droverbench ./cmd/drover: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return droverBin
}

// worker is one `drover worker` process and the proxy its ZooKeeper
// session runs through.
type worker struct {
	name    string
	cmd     *exec.Cmd
	done    chan struct{}
	logPath string
	latPath string // the bench.stamp histogram the worker publishes
	zk      *proxy.Proxy
	admin   string // the bound admin address, from the member node
	logRead int64  // how far sessionEvents has read logPath
}

// sessionEvents counts the ZooKeeper session suspensions and losses the
// log at path reports after byte from (the worker logs them at warn, the
// bench's level), and returns where it stopped: a window's count starts
// where the last one's ended. A member whose link was suspended verifies
// every claim when it comes back, so its ZooKeeper requests in that window
// are not its steady cost.
func sessionEvents(path string, from int64) (suspended, lost int, next int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, from, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return 0, 0, from, err
	}
	r := bufio.NewReader(f)
	next = from
	for {
		line, err := r.ReadString('\n')
		if err != nil { // a partial last line is read again next time
			return suspended, lost, next, nil
		}
		next += int64(len(line))
		switch {
		case testkit.SessionSuspended(line):
			suspended++
		case testkit.SessionLost(line): // as the chaos run counts them: a close is no loss
			lost++
		}
	}
}

// startWorker starts `drover worker` named name with env (the fleet's
// settings), its ZooKeeper connection through a counting proxy to zkAddr,
// and its admin listener on a free port.
func startWorker(tb testing.TB, bin, dir, name, zkAddr string, env []string) *worker {
	tb.Helper()
	px, err := proxy.New(zkAddr, proxy.CountZooKeeper())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(px.Close)
	w := &worker{name: name, done: make(chan struct{}), zk: px,
		logPath: filepath.Join(dir, name+".log"), latPath: filepath.Join(dir, name+".latency")}
	out, err := os.Create(w.logPath)
	if err != nil {
		tb.Fatal(err)
	}
	w.cmd = exec.Command(bin, "worker")
	w.cmd.Env = append(append([]string(nil), env...),
		"DROVER_ZOOKEEPER_SERVERS="+px.Addr,
		"DROVER_WORKER_NAME="+name,
		"DROVER_WORKER_ADMIN_ADDR=127.0.0.1:0",
		"DROVER_BENCH_LATENCY_FILE="+w.latPath,
	)
	w.cmd.Stdout, w.cmd.Stderr = out, out
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := w.cmd.Start(); err != nil {
		tb.Fatalf("start drover worker %s: %v", name, err)
	}
	go func() { w.cmd.Wait(); out.Close(); close(w.done) }()
	tb.Cleanup(func() {
		w.cmd.Process.Kill()
		<-w.done
		if tb.Failed() {
			b, _ := os.ReadFile(w.logPath)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			tb.Logf("--- %s log (tail) ---\n%s", name, b)
		}
	})
	return w
}

func (w *worker) pid() int { return w.cmd.Process.Pid }

// exited reports whether the process has ended.
func (w *worker) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// findAdmin reads the workers' admin addresses from their member nodes.
func findAdmin(ctx context.Context, s *coordinator.Session, ws []*worker) error {
	ms, err := s.Group().Members(ctx)
	if err != nil {
		return err
	}
	byName := map[string]drover.Member{}
	for _, m := range ms {
		byName[m.Member.Name] = m.Member
	}
	for _, w := range ws {
		m, ok := byName[w.name]
		if !ok || m.AdminAddr == "" {
			return fmt.Errorf("worker %s has no member node with an admin address yet", w.name)
		}
		w.admin = m.AdminAddr
	}
	return nil
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// ownedQueues reads the names of the queues the worker runs from its
// /debug/state in the names-only form: the full form is tens of megabytes of
// JSON at 25,000 queues, which the worker would build (and its RSS keep) for
// the harness alone.
func (w *worker) ownedQueues() ([]string, error) {
	resp, err := httpClient.Get("http://" + w.admin + "/debug/state?queues=names")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s /debug/state: %s", w.name, resp.Status)
	}
	var st struct {
		Worker struct {
			QueueNames []string `json:"queue_names"`
		} `json:"worker"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("%s /debug/state: %w", w.name, err)
	}
	return st.Worker.QueueNames, nil
}

// goroutines reads the worker's goroutine count from the first line of its
// goroutine profile ("goroutine profile: total N"): cheaper than /metrics,
// whose size grows with the per-queue series.
func (w *worker) goroutines() (int, error) {
	resp, err := httpClient.Get("http://" + w.admin + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("%s goroutine profile: %w", w.name, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "goroutine profile: total")))
	if err != nil {
		return 0, fmt.Errorf("%s goroutine profile: first line %q", w.name, line)
	}
	return n, nil
}

// liveHeap reads the worker's live heap: HeapAlloc right after a collection
// (the heap profile with gc=1 collects first), from the runtime.MemStats
// lines that end the debug=1 form. When dir is not empty, the profile
// itself (the binary form, for go tool pprof) is saved there as
// <worker>.heap.
func (w *worker) liveHeap(dir string) (int64, error) {
	if dir != "" {
		resp, err := httpClient.Get("http://" + w.admin + "/debug/pprof/heap?gc=1")
		if err != nil {
			return 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, fmt.Errorf("%s heap profile: %w", w.name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, w.name+".heap"), body, 0o644); err != nil {
			return 0, err
		}
	}
	resp, err := httpClient.Get("http://" + w.admin + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%s heap profile: %w", w.name, err)
	}
	return 0, fmt.Errorf("%s heap profile: no HeapAlloc line", w.name)
}

// childrenRSS sums the resident memory of the worker's child processes
// (the task lease's supervisor; inline tasks start none).
func (w *worker) childrenRSS() (int64, int, error) {
	kids, err := Children(w.pid())
	if err != nil {
		return 0, 0, err
	}
	var sum int64
	for _, k := range kids {
		if r, err := RSS(k); err == nil {
			sum += r
		}
	}
	return sum, len(kids), nil
}

// waitConverged waits until the workers together run every one of want
// queues, each exactly once, and returns how long that took. While the
// owner nodes are fewer than want it polls ZooKeeper's counts (cheap: child
// counts, no listing); then it reads the workers' queue names
// (/debug/state?queues=names), every 2 s and less often at large sizes. It
// fails after bound, naming what each worker runs.
func waitConverged(tb testing.TB, s *coordinator.Session, ws []*worker, want int, bound time.Duration) time.Duration {
	tb.Helper()
	start := time.Now()
	ctx := context.Background()
	var last string
	for {
		for _, w := range ws {
			if w.exited() {
				tb.Fatalf("worker %s exited while the fleet converged on %d queues (see its log)", w.name, want)
			}
		}
		if time.Since(start) > bound {
			tb.Fatalf("the fleet did not run all %d queues within %s: %s", want, bound, last)
		}
		if err := findAdmin(ctx, s, ws); err != nil {
			last = err.Error()
			time.Sleep(500 * time.Millisecond)
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := s.Group().Stats(sctx)
		cancel()
		if err != nil || st.Owned < want {
			last = fmt.Sprintf("%d of %d queues have an owner node (err %v)", st.Owned, want, err)
			time.Sleep(time.Second)
			continue
		}
		seen := make(map[string]bool, want)
		total, dup := 0, 0
		var parts []string
		for _, w := range ws {
			names, err := w.ownedQueues()
			if err != nil {
				parts = append(parts, err.Error())
				continue
			}
			for _, n := range names {
				if seen[n] {
					dup++
				}
				seen[n] = true
			}
			total += len(names)
			parts = append(parts, fmt.Sprintf("%s runs %d", w.name, len(names)))
		}
		last = strings.Join(parts, ", ") + fmt.Sprintf(" (%d distinct, %d run twice)", len(seen), dup)
		if len(seen) == want && total == want {
			return time.Since(start)
		}
		time.Sleep(max(2*time.Second, time.Duration(want/10)*time.Millisecond))
	}
}

// settle waits until every worker has used less than quietPct of a core
// over a probe of a few seconds, at least min and at most max, and returns
// how long it waited: the idle window measures the fleet at rest, not the
// end of its start-up, yet a fleet that never quiets down is measured too.
func settle(ws []*worker, minWait, maxWait time.Duration, quietPct float64) time.Duration {
	start := time.Now()
	time.Sleep(minWait)
	const probe = 5 * time.Second
	for time.Since(start)+probe <= maxWait {
		before := make([]time.Duration, len(ws))
		for i, w := range ws {
			before[i], _ = CPUTime(w.pid())
		}
		t0 := time.Now()
		time.Sleep(probe)
		quiet := true
		for i, w := range ws {
			now, _ := CPUTime(w.pid())
			if 100*(now-before[i]).Seconds()/time.Since(t0).Seconds() >= quietPct {
				quiet = false
			}
		}
		if quiet {
			break
		}
	}
	return time.Since(start)
}

// stageStat and stageStats mirror the worker's stage counters
// (worker.Stages, in /debug/state): a count and a total per stage since the
// worker started.
type stageStat struct {
	Count   int64   `json:"count"`
	TotalMs float64 `json:"total_ms"`
}

type stageStats struct {
	Wake           stageStat `json:"wake"`
	ReadQueued     stageStat `json:"read_queued"`
	ReadTrip       stageStat `json:"read_trip"`
	EnqueueToRead  stageStat `json:"enqueue_to_read"`
	EnqueueToStart stageStat `json:"enqueue_to_start"`
	Carried        stageStat `json:"carried"` // messages taken from their wake-ups, not read
	BacklogRounds  int64     `json:"backlog_rounds"`
	BacklogReads   int64     `json:"backlog_reads"`
	ReadRounds     int64     `json:"read_rounds"`
	Reads          int64     `json:"reads"`
}

// stages reads the worker's stage counters.
func (w *worker) stages() (stageStats, error) {
	resp, err := httpClient.Get("http://" + w.admin + "/debug/state?queues=names")
	if err != nil {
		return stageStats{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return stageStats{}, fmt.Errorf("%s /debug/state: %s", w.name, resp.Status)
	}
	var st struct {
		Worker struct {
			Stages stageStats `json:"stages"`
		} `json:"worker"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return stageStats{}, fmt.Errorf("%s /debug/state: %w", w.name, err)
	}
	return st.Worker.Stages, nil
}

// readStages sums the stage counters of every worker.
func readStages(ws []*worker) (stageStats, error) {
	var sum stageStats
	for _, w := range ws {
		s, err := w.stages()
		if err != nil {
			return sum, err
		}
		for _, p := range []struct{ to, from *stageStat }{
			{&sum.Wake, &s.Wake}, {&sum.ReadQueued, &s.ReadQueued}, {&sum.ReadTrip, &s.ReadTrip},
			{&sum.EnqueueToRead, &s.EnqueueToRead}, {&sum.EnqueueToStart, &s.EnqueueToStart},
			{&sum.Carried, &s.Carried},
		} {
			p.to.Count += p.from.Count
			p.to.TotalMs += p.from.TotalMs
		}
		sum.BacklogRounds += s.BacklogRounds
		sum.BacklogReads += s.BacklogReads
		sum.ReadRounds += s.ReadRounds
		sum.Reads += s.Reads
	}
	return sum, nil
}

// meanMs is the mean time of the stage between two readings.
func meanMs(before, after stageStat) float64 {
	if n := after.Count - before.Count; n > 0 {
		return (after.TotalMs - before.TotalMs) / float64(n)
	}
	return 0
}
