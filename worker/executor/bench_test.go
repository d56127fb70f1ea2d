package executor

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// benchConcurrency are the numbers of tasks run at once.
var benchConcurrency = []int{1, 4}

// runConcurrently runs b.N calls of task on workers goroutines and reports
// tasks/s.
func runConcurrently(b *testing.B, workers int, task func() error) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	elapsed, err := runN(workers, b.N, task)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
}

// runN makes n calls of task on workers goroutines and returns how long they
// took and the first error, after which each goroutine stops.
func runN(workers, n int, task func() error) (time.Duration, error) {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		firstErr atomic.Pointer[error]
	)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := task(); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := firstErr.Load(); err != nil {
		return elapsed, *err
	}
	return elapsed, nil
}

// benchExecutor runs task through a fresh executor at each concurrency.
func benchExecutor(b *testing.B, task *Task) {
	for _, c := range benchConcurrency {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			e := newTestExecutor(b, Config{})
			runConcurrently(b, c, func() error {
				if res := e.Execute(context.Background(), task); res.Outcome != OutcomeSuccess {
					return fmt.Errorf("want success, have %s (%s) stderr %q", res.Outcome, res.Reason, tail(res.Stderr))
				}
				return nil
			})
		})
	}
}

// BenchmarkExecTrue runs /bin/true through the subprocess executor (the
// fast path: no limits, no user switch). Compare with BenchmarkBareSpawnTrue.
func BenchmarkExecTrue(b *testing.B) {
	benchExecutor(b, testTask(b, "true", command("/bin/true")))
}

// BenchmarkBareSpawnTrue is the floor: exec.Command("/bin/true").Run() in a
// loop at the same concurrency.
func BenchmarkBareSpawnTrue(b *testing.B) {
	for _, c := range benchConcurrency {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			runConcurrently(b, c, func() error { return exec.Command("/bin/true").Run() })
		})
	}
}

// BenchmarkExecTrueWithLimits runs /bin/true under resource limits, through
// the re-executed rlimit trampoline.
func BenchmarkExecTrueWithLimits(b *testing.B) {
	task := testTask(b, "true", command("/bin/true"))
	task.Limits = drover.Limits{OpenFiles: 1024, CPUSeconds: 60}
	benchExecutor(b, task)
}

// BenchmarkGoChild runs a no-op Go handler in a re-executed child of the
// (test) binary.
func BenchmarkGoChild(b *testing.B) {
	benchExecutor(b, testTask(b, handlerNoop, goRoute))
}

// BenchmarkInline runs a no-op Go handler in process.
func BenchmarkInline(b *testing.B) {
	benchExecutor(b, testTask(b, handlerNoop, inlineRoute))
}

// BenchmarkExecVsBareTrue alternates rounds of the executor and of a bare
// spawn of /bin/true (20 tasks per round at the given concurrency), so that
// both see the same machine load, and reports each one's rate and their
// ratio (exec/bare; 1 means no overhead). Use it on a busy machine, where
// the separate benchmarks drift apart.
func BenchmarkExecVsBareTrue(b *testing.B) {
	const round = 20
	for _, c := range benchConcurrency {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			e := newTestExecutor(b, Config{})
			task := testTask(b, "true", command("/bin/true"))
			kinds := [2]func() error{
				func() error { return exec.Command("/bin/true").Run() },
				func() error {
					if res := e.Execute(context.Background(), task); res.Outcome != OutcomeSuccess {
						return fmt.Errorf("want success, have %s (%s)", res.Outcome, res.Reason)
					}
					return nil
				},
			}
			var elapsed [2]time.Duration
			var tasks [2]int
			b.ResetTimer()
			for done := 0; done < b.N; {
				for k, run := range kinds {
					n := min(round, b.N-done)
					if n <= 0 {
						break
					}
					took, err := runN(c, n, run)
					elapsed[k] += took
					tasks[k] += n
					done += n
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			if tasks[0] == 0 || tasks[1] == 0 {
				return
			}
			bare := float64(tasks[0]) / elapsed[0].Seconds()
			execRate := float64(tasks[1]) / elapsed[1].Seconds()
			b.ReportMetric(execRate, "exec-tasks/s")
			b.ReportMetric(bare, "bare-tasks/s")
			b.ReportMetric(execRate/bare, "exec/bare")
		})
	}
}
