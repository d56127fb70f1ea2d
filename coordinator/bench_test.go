package coordinator

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// BenchmarkCommit measures fenced offset commits per second: one goroutine
// on one queue, and 8 goroutines each on its own queue.
func BenchmarkCommit(b *testing.B) {
	for _, workers := range []int{1, 8} {
		b.Run(fmt.Sprintf("goroutines=%d", workers), func(b *testing.B) {
			server := testenv.ZooKeeper(b)
			s := connect(b, server.Addrs, testenv.Chroot(b))
			ctx := context.Background()
			claims := make([]*Claim, workers)
			for i := range claims {
				c, err := s.Claims().Claim(ctx, fmt.Sprintf("q%d", i), Owner{Member: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				claims[i] = c
			}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w, c := range claims {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < b.N; i += workers {
						if err := c.Commit(ctx, drover.Offset{Position: drover.Position(i + 1)}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "commits/s")
		})
	}
}

// BenchmarkClaimRelease measures claim + release pairs per second.
func BenchmarkClaimRelease(b *testing.B) {
	server := testenv.ZooKeeper(b)
	s := connect(b, server.Addrs, testenv.Chroot(b))
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		c, err := s.Claims().Claim(ctx, "q", Owner{Member: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Release(ctx, drover.Offset{Position: drover.Position(i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pairs/s")
}

// BenchmarkLostReport measures the time from a cut connection to the lost
// report, for 4 s and 10 s session timeouts (expected: about 2/3 of the
// timeout after the last contact).
func BenchmarkLostReport(b *testing.B) {
	for _, timeout := range []time.Duration{4 * time.Second, 10 * time.Second} {
		b.Run(fmt.Sprintf("session=%s", timeout), func(b *testing.B) {
			server := testenv.ZooKeeper(b)
			var total time.Duration
			for i := 0; i < b.N; i++ {
				proxy := testenv.NewProxy(b, server.Addr)
				s := connect(b, []string{proxy.Addr}, testenv.Chroot(b), func(c *Config) { c.SessionTimeout = timeout })
				cut := time.Now()
				proxy.Cut()
				<-s.Done()
				total += time.Since(cut)
				s.Close()
				proxy.Close()
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "s/lost-report")
			b.ReportMetric(total.Seconds()/float64(b.N)/timeout.Seconds(), "fraction-of-timeout")
		})
	}
}

// BenchmarkLeaderKillWritePause measures how long commits pause when the
// ensemble leader is killed (from the kill to the first successful commit).
func BenchmarkLeaderKillWritePause(b *testing.B) {
	ens := testenv.NewZKEnsemble(b)
	s := connect(b, ens.Addrs, testenv.Chroot(b), func(c *Config) { c.SessionTimeout = 10 * time.Second })
	ctx := context.Background()
	c, err := s.Claims().Claim(ctx, "q", Owner{Member: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		leader, err := ens.Leader()
		if err != nil {
			b.Fatal(err)
		}
		killed := time.Now()
		ens.Nodes[leader].Kill(b)
		for {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			err := c.Commit(cctx, drover.Offset{Position: drover.Position(i + 1)})
			cancel()
			if err == nil {
				break
			}
			if errorsIs(err, drover.ErrFenced) {
				b.Fatal(err)
			}
		}
		total += time.Since(killed)
		b.StopTimer()
		ens.Nodes[leader].Start(b)
		ens.WaitServing(b)
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/write-pause")
}
