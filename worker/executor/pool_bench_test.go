package executor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// Benchmarks of pooled children against a process per task, on the
// executor alone (no queue): `make bench` reports them in the "Process
// pool" section. Every benchmark runs at concurrency 4.

const poolBenchConcurrency = 4

// executeOK runs task and fails unless it succeeded.
func executeOK(e Executor, task *Task) error {
	if res := e.Execute(context.Background(), task); res.Outcome != OutcomeSuccess {
		return fmt.Errorf("want success, have %s (%s) stderr %q", res.Outcome, res.Reason, tail(res.Stderr))
	}
	return nil
}

// rounds runs kinds alternately, round tasks of each per turn at
// poolBenchConcurrency, until every kind has run n tasks, and returns each
// kind's tasks/s. Alternating makes both see the same machine load.
func rounds(b *testing.B, n, round int, kinds ...func() error) []float64 {
	b.Helper()
	elapsed := make([]time.Duration, len(kinds))
	done := make([]int, len(kinds))
	for done[len(kinds)-1] < n {
		for k, run := range kinds {
			m := min(round, n-done[k])
			if m <= 0 {
				continue
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			var failed atomic.Pointer[error]
			start := time.Now()
			for range poolBenchConcurrency {
				wg.Go(func() {
					for next.Add(1) <= int64(m) {
						if err := run(); err != nil {
							failed.CompareAndSwap(nil, &err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed[k] += time.Since(start)
			done[k] += m
			if err := failed.Load(); err != nil {
				b.Fatal(*err)
			}
		}
	}
	rates := make([]float64, len(kinds))
	for k := range kinds {
		rates[k] = float64(done[k]) / elapsed[k].Seconds()
	}
	return rates
}

// warm runs task once on each of poolBenchConcurrency goroutines, so the
// pool holds its children before the clock starts.
func warm(b *testing.B, e Executor, task *Task) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, poolBenchConcurrency)
	for range poolBenchConcurrency {
		wg.Go(func() { errs <- executeOK(e, task) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPoolGoNoop: a no-op Go handler in a re-executed child per task,
// in pooled children (max_tasks_per_child 1000), and inline; one figure
// each, measured in turns. b.N is ignored: each run is a fixed size.
func BenchmarkPoolGoNoop(b *testing.B) {
	e, _ := newPoolExecutor(b, Config{})
	perTask := testTask(b, handlerNoop, goRoute)
	pooled := testTask(b, handlerNoop, pooledGo(drover.PoolConfig{MaxTasksPerChild: 1000}))
	pooled.PoolSize = poolBenchConcurrency
	inline := testTask(b, handlerNoop, inlineRoute)
	warm(b, e, pooled)
	b.ResetTimer()
	var per, pool, in []float64
	for range b.N {
		// Per task: 200 tasks (about half a second); pooled and inline:
		// 20,000 each (the pooled children are recycled every 1,000).
		r := rounds(b, 200, 200, func() error { return executeOK(e, perTask) })
		per = append(per, r[0])
		r = rounds(b, 20000, 20000, func() error { return executeOK(e, pooled) })
		pool = append(pool, r[0])
		r = rounds(b, 20000, 20000, func() error { return executeOK(e, inline) })
		in = append(in, r[0])
	}
	b.StopTimer()
	b.ReportMetric(mean(per), "pertask-tasks/s")
	b.ReportMetric(mean(pool), "pooled-tasks/s")
	b.ReportMetric(mean(in), "inline-tasks/s")
	b.ReportMetric(mean(pool)/mean(per), "pooled/pertask")
}

// pythonNoop is a Python no-op task program for both modes: per task it
// reads the envelope from stdin and exits; pooled it serves drover_pool.
const pythonNoop = `import os, sys
if os.environ.get("DROVER_POOL_PROTOCOL"):
    import drover_pool
    drover_pool.serve({"*": lambda envelope, ctx: None})
else:
    sys.stdin.read()
`

// BenchmarkPoolPythonNoop: a Python no-op task started per message against
// the same program pooled (max_tasks_per_child 1000), in turns.
func BenchmarkPoolPythonNoop(b *testing.B) {
	e, _ := newPoolExecutor(b, Config{})
	path := filepath.Join(b.TempDir(), "noop.py")
	if err := os.WriteFile(path, []byte(pythonNoop), 0o644); err != nil {
		b.Fatal(err)
	}
	env := map[string]string{"PYTHONPATH": pythonDir(b)}
	perTask := testTask(b, "noop", drover.TaskRoute{Command: []string{python3(b), path}, Env: env})
	pooled := testTask(b, "noop", drover.TaskRoute{Command: []string{python3(b), path}, Env: env,
		Pool: &drover.PoolConfig{MaxTasksPerChild: 1000}})
	pooled.PoolSize = poolBenchConcurrency
	warm(b, e, pooled)
	b.ResetTimer()
	var per, pool []float64
	for range b.N {
		r := rounds(b, 40, 40, func() error { return executeOK(e, perTask) })
		per = append(per, r[0])
		r = rounds(b, 10000, 10000, func() error { return executeOK(e, pooled) })
		pool = append(pool, r[0])
	}
	b.StopTimer()
	b.ReportMetric(mean(per), "pertask-tasks/s")
	b.ReportMetric(mean(pool), "pooled-tasks/s")
	b.ReportMetric(mean(pool)/mean(per), "pooled/pertask")
}

// BenchmarkPoolManyQueuesShareOnePool: the Python no-op pooled (no
// recycling), its tasks
// from 200 queues (a family's keys, round robin) against the same from one
// queue, in turns, with the pool sized by the slots (poolBenchConcurrency).
// One pool serves every queue of a route, so the two rates should match,
// and the children stay at the slots (children-max: the most the pool held,
// read after each round). With a pool per queue, 200 queues started 200
// Python children and ran at a fraction of the rate (issue 40).
func BenchmarkPoolManyQueuesShareOnePool(b *testing.B) {
	e, po := newPoolExecutor(b, Config{})
	path := filepath.Join(b.TempDir(), "noop.py")
	if err := os.WriteFile(path, []byte(pythonNoop), 0o644); err != nil {
		b.Fatal(err)
	}
	// No recycling: children recycled together (every 1,000 tasks) land
	// their starts in the same turn of every round, on whichever kind runs
	// it, which measured recycling rather than sharing.
	route := drover.TaskRoute{Command: []string{python3(b), path}, Env: map[string]string{"PYTHONPATH": pythonDir(b)},
		Pool: &drover.PoolConfig{}}
	const queues = 200
	tasks := make([]*Task, queues)
	for i := range tasks {
		tasks[i] = testTask(b, "noop", route)
		tasks[i].Queue = fmt.Sprintf("cust-%03d", i)
		tasks[i].PoolSize = poolBenchConcurrency
	}
	warm(b, e, tasks[0])
	var turn atomic.Int64
	many := func() error { return executeOK(e, tasks[turn.Add(1)%queues]) }
	one := func() error { return executeOK(e, tasks[0]) }
	children := 0
	b.ResetTimer()
	var rMany, rOne []float64
	for range b.N {
		r := rounds(b, 10000, 1000, many, one)
		rMany, rOne = append(rMany, r[0]), append(rOne, r[1])
		for _, st := range po.PoolStates() {
			children = max(children, len(st.Children)+st.Starting)
		}
	}
	b.StopTimer()
	b.ReportMetric(mean(rMany), "200queues-tasks/s")
	b.ReportMetric(mean(rOne), "1queue-tasks/s")
	b.ReportMetric(mean(rMany)/mean(rOne), "200queues/1queue")
	b.ReportMetric(float64(children), "children-max")
	if n := len(po.PoolStates()); n != 1 {
		b.Errorf("want one pool for the route, have %d", n)
	}
}

// BenchmarkPoolMaxTasksOneVsSpawn: pooled Go children that serve one task
// each (max_tasks_per_child 1, so every task needs a new child, started
// ahead in the background) against a bare loop that spawns the same
// program (the binary in its per-task Go child mode, with the envelope on
// stdin) with os/exec, alternating rounds of 40.
func BenchmarkPoolMaxTasksOneVsSpawn(b *testing.B) {
	e, _ := newPoolExecutor(b, Config{})
	pooled := testTask(b, handlerNoop, pooledGo(drover.PoolConfig{MaxTasksPerChild: 1}))
	pooled.PoolSize = poolBenchConcurrency
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), childEnv+"="+childModeGo)
	spawn := func() error {
		cmd := exec.Command(self, childArgGo, handlerNoop)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(string(pooled.Envelope))
		return cmd.Run()
	}
	if pooled.Envelope == nil {
		b.Fatal("the task has no envelope")
	}
	warm(b, e, pooled)
	b.ResetTimer()
	var pool, bare []float64
	for range b.N {
		r := rounds(b, 400, 40, func() error { return executeOK(e, pooled) }, spawn)
		pool, bare = append(pool, r[0]), append(bare, r[1])
	}
	b.StopTimer()
	b.ReportMetric(mean(pool), "pooled-tasks/s")
	b.ReportMetric(mean(bare), "bare-tasks/s")
	b.ReportMetric(mean(pool)/mean(bare), "pooled/bare")
}

func mean(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s / float64(len(vs))
}
