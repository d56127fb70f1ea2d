package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// Benchmarks against the shared standalone Redis (testenv). Each reports
// msgs/s; the figures include the network round trips and the Lua scripts.

// benchStore returns a Store under a fresh prefix whose keys are deleted
// when the benchmark ends.
func benchStore(b *testing.B) *Store {
	b.Helper()
	rdb, err := NewClient(ClientOptions{Addrs: []string{testenv.Redis(b).Addr}})
	if err != nil {
		b.Fatalf("NewClient: %v", err)
	}
	s, err := New(Config{Client: rdb, Prefix: testenv.Prefix(b)})
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	b.Cleanup(func() {
		ctx := context.Background()
		for _, q := range []string{"bench"} {
			k := s.keys.queue(q)
			rdb.Del(ctx, k.log, k.msg, k.seq, k.delayed, k.dead, k.deadmsg, k.seen)
		}
		rdb.Del(ctx, s.keys.queues())
		_ = rdb.Close()
	})
	return s
}

func benchMessage() *drover.Message {
	return &drover.Message{Queue: "bench", Task: "send-email",
		Args: []byte(`{"to":"user@example.com","template":"welcome","user_id":123456}`)}
}

// meter measures a benchmark's throughput and, because the machine may be
// shared, the CPU time spent per message by this process (the client) and by
// the Redis server, and the commands Redis ran per message: those do not
// depend on what else runs.
type meter struct {
	s        *Store
	start    time.Time
	client   time.Duration
	redisCPU float64
	commands int64
}

func startMeter(b *testing.B, s *Store) *meter {
	b.Helper()
	m := &meter{s: s, commands: redisCommands(b, s), redisCPU: redisCPU(b, s)}
	b.ResetTimer()
	m.start, m.client = time.Now(), processCPU()
	return m
}

// stop reports msgs/s, client-µs/msg, redis-µs/msg and redis-cmds/msg for
// msgs messages.
func (m *meter) stop(b *testing.B, msgs int) {
	b.Helper()
	elapsed := time.Since(m.start)
	client := processCPU() - m.client
	b.StopTimer()
	server := redisCPU(b, m.s) - m.redisCPU
	commands := redisCommands(b, m.s) - m.commands
	if msgs == 0 {
		return
	}
	b.ReportMetric(float64(msgs)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(client.Microseconds())/float64(msgs), "client-µs/msg")
	b.ReportMetric(server*1e6/float64(msgs), "redis-µs/msg")
	b.ReportMetric(float64(commands)/float64(msgs), "redis-cmds/msg")
}

// redisCommands is the count of commands the server has run (INFO
// commandstats: script calls and the commands they call), but for INFO.
func redisCommands(b *testing.B, s *Store) int64 {
	b.Helper()
	info, err := s.rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatalf("INFO commandstats: %v", err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		c, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			b.Fatalf("commandstats %q: %v", line, err)
		}
		n += c
	}
	return n
}

// processCPU is the user+system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU is the Redis server's used_cpu_user + used_cpu_sys, in seconds.
func redisCPU(b *testing.B, s *Store) float64 {
	b.Helper()
	info, err := s.rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatalf("INFO cpu: %v", err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}

// BenchmarkEnqueue: single Enqueue calls, from 1 and 8 goroutines (the
// coalescer batches concurrent calls into one pipeline; msgs/flush is how
// many a round trip carried on average); ",nowake" with
// Config.DisableWakeups, the one guarantee a lone call can drop.
func BenchmarkEnqueue(b *testing.B) {
	for _, c := range []struct {
		goroutines int
		nowake     bool
	}{{1, false}, {8, false}, {1, true}, {8, true}} {
		goroutines := c.goroutines
		name := fmt.Sprintf("goroutines=%d", goroutines)
		if c.nowake {
			name += ",nowake"
		}
		b.Run(name, func(b *testing.B) {
			s := benchStore(b)
			s.wakeups = !c.nowake
			var flushes atomic.Int64
			flush := s.batcher.flush
			s.batcher.flush = func(ctx context.Context, batch []*enqueueRequest) {
				flushes.Add(1)
				flush(ctx, batch)
			}
			ctx := context.Background()
			m := benchMessage()
			meter := startMeter(b, s)
			var wg sync.WaitGroup
			for g := range goroutines {
				n := b.N / goroutines
				if g < b.N%goroutines {
					n++
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range n {
						if _, err := s.Producer().Enqueue(ctx, m); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			meter.stop(b, b.N)
			b.ReportMetric(float64(b.N)/float64(max(flushes.Load(), 1)), "msgs/flush")
		})
	}
}

// BenchmarkEnqueueBatch: EnqueueBatch of 1000 messages per call.
func BenchmarkEnqueueBatch(b *testing.B) {
	const batch = 1000
	b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
		s := benchStore(b)
		ctx := context.Background()
		msgs := make([]*drover.Message, batch)
		for i := range msgs {
			msgs[i] = benchMessage()
		}
		meter := startMeter(b, s)
		for range b.N {
			if _, err := s.Producer().EnqueueBatch(ctx, msgs); err != nil {
				b.Fatal(err)
			}
		}
		meter.stop(b, b.N*batch)
	})
}

// BenchmarkReadAfter: ReadAfter of 100 and 1000 entries from a log of
// 100,000, walking forward from a moving offset. "+decode" also decodes
// every envelope, which is what a worker does with each entry it runs.
func BenchmarkReadAfter(b *testing.B) {
	const size = 100_000
	for _, c := range []struct {
		batch  int
		decode bool
	}{{100, false}, {1000, false}, {1000, true}} {
		name := fmt.Sprintf("batch=%d", c.batch)
		if c.decode {
			name += "+decode"
		}
		b.Run(name, func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			msgs := make([]*drover.Message, 1000)
			for i := range msgs {
				msgs[i] = benchMessage()
			}
			for range size / len(msgs) {
				if _, err := s.Producer().EnqueueBatch(ctx, msgs); err != nil {
					b.Fatal(err)
				}
			}
			var offset drover.Position
			read := 0
			meter := startMeter(b, s)
			for range b.N {
				es, err := s.Log().ReadAfter(ctx, "bench", offset, c.batch)
				if err != nil {
					b.Fatal(err)
				}
				if len(es) == 0 { // wrapped around
					offset = 0
					continue
				}
				if c.decode {
					for i := range es {
						if _, err := es[i].Decode(); err != nil {
							b.Fatal(err)
						}
					}
				}
				read += len(es)
				offset = es[len(es)-1].Position
			}
			meter.stop(b, read)
		})
	}
}

// BenchmarkRecordStarts: RecordStarts of one message, as a worker's runner
// at low concurrency sends it (a start of its own round trip), and of a
// batch of 16 (the starter's batch when many runners start at once). The
// messages need not exist: the record is an HINCRBY of the message's
// starts field. Judge it by client-µs/msg and allocations (the machine
// may be shared).
func BenchmarkRecordStarts(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			queues, ids := make([]string, n), make([]string, n)
			for i := range ids {
				queues[i], ids[i] = "bench", fmt.Sprintf("m%d", i)
			}
			b.ReportAllocs()
			meter := startMeter(b, s)
			for range b.N {
				if _, err := s.Log().RecordStarts(ctx, queues, ids); err != nil {
					b.Fatal(err)
				}
			}
			meter.stop(b, n*b.N)
		})
	}
}
