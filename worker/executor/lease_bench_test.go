package executor

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// BenchmarkLeaseTrue measures what the task lease costs on the task path:
// it alternates rounds (20 tasks each, at concurrency 4) of /bin/true through
// the executor with a lease (renewed every 100 ms, bound 10s/3 as for the
// default session timeout), through the executor without one, and spawned
// bare by os/exec (in a rotating order), so that all three see the same
// machine load; it reports
// each rate and the ratios lease/nolease and lease/bare.
func BenchmarkLeaseTrue(b *testing.B) {
	const (
		round       = 20
		concurrency = 4
	)
	lease, err := NewLease(LeaseConfig{Bound: 10 * time.Second / 3})
	if err != nil {
		b.Fatal(err)
	}
	defer lease.Close()
	stop := make(chan struct{})
	var renewer sync.WaitGroup
	renewer.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			_ = lease.Renew()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	defer func() { close(stop); renewer.Wait() }()

	task := testTask(b, "true", command("/bin/true"))
	through := func(e Executor) func() error {
		return func() error {
			if res := e.Execute(context.Background(), task); res.Outcome != OutcomeSuccess {
				return fmt.Errorf("want success, have %s (%s)", res.Outcome, res.Reason)
			}
			return nil
		}
	}
	kinds := []func() error{
		through(newTestExecutor(b, Config{Lease: lease})),
		through(newTestExecutor(b, Config{})),
		func() error { return exec.Command("/bin/true").Run() },
	}
	elapsed := make([]time.Duration, len(kinds))
	tasks := make([]int, len(kinds))
	b.ResetTimer()
	for cycle, done := 0, 0; done < b.N; cycle++ {
		for i := range kinds {
			// Rotate the order, so that no kind always follows the same one.
			k := (i + cycle) % len(kinds)
			run := kinds[k]
			n := min(round, b.N-done)
			if n <= 0 {
				break
			}
			took, err := runN(concurrency, n, run)
			elapsed[k] += took
			tasks[k] += n
			done += n
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	for _, n := range tasks {
		if n == 0 {
			return
		}
	}
	rate := func(k int) float64 { return float64(tasks[k]) / elapsed[k].Seconds() }
	b.ReportMetric(rate(0), "lease-tasks/s")
	b.ReportMetric(rate(1), "nolease-tasks/s")
	b.ReportMetric(rate(2), "bare-tasks/s")
	b.ReportMetric(rate(0)/rate(1), "lease/nolease")
	b.ReportMetric(rate(0)/rate(2), "lease/bare")
}
