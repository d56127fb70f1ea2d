package coordinator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/proxy"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// BenchmarkClaimMovedQueues measures what a member gaining queues that were
// claimed before costs ZooKeeper (a join, a leave's or a crash's
// receivers): 256 claims at once, each followed by its config read, as a
// joining member's reconciler sends them. It reports the requests counted
// on the wire and the server's CPU per queue claimed (robust figures on a
// shared machine), and claims per second. The queues share a registry
// bucket, so the bucket's watch is armed once a round.
func BenchmarkClaimMovedQueues(b *testing.B) {
	server := testenv.ZooKeeper(b)
	root := testenv.Chroot(b)
	px, err := proxy.New(server.Addr, proxy.CountZooKeeper())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(px.Close)
	admin := connect(b, server.Addrs, root)
	s := connect(b, []string{px.Addr}, root)
	ctx := context.Background()
	const n = 256
	queues := oneBucketQueues(n)
	for _, q := range queues {
		if err := admin.Queues().Create(ctx, drover.QueueConfig{Name: q, Concurrency: 1}); err != nil {
			b.Fatal(err)
		}
		c, err := admin.Claims().Claim(ctx, q, Owner{Member: "before"})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Release(ctx, drover.Offset{Position: 1}); err != nil {
			b.Fatal(err)
		}
	}
	w := s.Queues().WatchConfigs(ctx)
	each := func(f func(i int, q string) error) {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, q := range queues {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = f(i, q)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
	}
	var (
		counted proxy.Counts
		zkCPU   time.Duration
		elapsed time.Duration
	)
	claims := make([]*Claim, n)
	b.ResetTimer()
	for range b.N {
		c0, z0, t0 := px.Counts(), zkProcCPU(server.PID()), time.Now()
		each(func(i int, q string) error {
			c, err := s.Claims().Claim(ctx, q, Owner{Member: "m"})
			if err != nil {
				return err
			}
			claims[i] = c
			e, err := w.Read(ctx, q)
			if err == nil && e.Err != nil {
				err = e.Err
			}
			return err
		})
		elapsed += time.Since(t0)
		zkCPU += zkProcCPU(server.PID()) - z0
		counted = counted.Add(px.Counts().Sub(c0))
		b.StopTimer()
		each(func(i int, q string) error {
			w.Forget(q)
			return claims[i].Release(ctx, drover.Offset{Position: 1})
		})
		b.StartTimer()
	}
	claimed := float64(n * b.N)
	b.ReportMetric(float64(counted.Requests())/claimed, "zk-requests/queue")
	b.ReportMetric(float64(counted.Reads)/claimed, "zk-reads/queue")
	b.ReportMetric(float64(counted.Writes)/claimed, "zk-writes/queue")
	if server.PID() != 0 {
		b.ReportMetric(float64(zkCPU.Microseconds())/claimed, "zk-cpu-µs/queue")
	}
	b.ReportMetric(claimed/elapsed.Seconds(), "claims/s")
}

// zkProcCPU is a process's user and system CPU from /proc (0 when it
// cannot be read).
func zkProcCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (in parentheses, which may hold spaces):
	// utime and stime are the 14th and 15th of the whole line.
	_, rest, ok := strings.Cut(string(data), ") ")
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
