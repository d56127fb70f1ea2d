package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

// roundTrips counts the Redis round trips a client makes: one per command
// sent alone, one per pipeline.
type roundTrips struct{ n atomic.Int64 }

func (c *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

// benchFleet is 10,000 configured queues with one message each, built once
// per test binary.
type benchFleet struct {
	srv    *Server
	zk     *coordinator.Session // what srv's ops reads, for benchmarks of its parts
	store  *queue.Store
	http   *httptest.Server
	trips  *roundTrips
	token  string
	queues int
}

var (
	benchOnce sync.Once
	bench     *benchFleet
	benchErr  error
)

const benchQueues = 10000

func setupBench(b *testing.B) *benchFleet {
	b.Helper()
	zkAddrs := testenv.ZooKeeper(b).Addrs
	redisAddr := testenv.Redis(b).Addr
	benchOnce.Do(func() { bench, benchErr = buildBenchFleet(zkAddrs, redisAddr, testenv.Chroot(b), testenv.Prefix(b)) })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return bench
}

func buildBenchFleet(zkAddrs []string, redisAddr, root, prefix string) (*benchFleet, error) {
	ctx := context.Background()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: zkAddrs, Root: root, SessionTimeout: 20 * time.Second})
	if err != nil {
		return nil, err
	}
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{redisAddr}})
	if err != nil {
		return nil, err
	}
	trips := &roundTrips{}
	rdb.AddHook(trips)
	st, err := queue.New(queue.Config{Client: rdb, Prefix: prefix})
	if err != nil {
		return nil, err
	}
	names := make([]string, benchQueues)
	for i := range names {
		names[i] = fmt.Sprintf("q%05d", i)
	}
	// Configure the queues with 32 creates in flight, and one message each.
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	next := make(chan string)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for q := range next {
				if err := s.Queues().Create(ctx, drover.QueueConfig{Name: q, Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for _, q := range names {
		next <- q
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	for start := 0; start < len(names); start += 1000 {
		var msgs []*drover.Message
		for _, q := range names[start:min(start+1000, len(names))] {
			msgs = append(msgs, &drover.Message{Queue: q, Task: "t"})
		}
		if _, err := st.Producer().EnqueueBatch(ctx, msgs); err != nil {
			return nil, err
		}
	}
	tok, spec, err := auth.NewToken("bench", auth.Viewer)
	if err != nil {
		return nil, err
	}
	a, err := auth.New(auth.Config{Tokens: []string{spec}})
	if err != nil {
		return nil, err
	}
	o, err := ops.New(ops.Config{ZK: s, Store: st})
	if err != nil {
		return nil, err
	}
	// A TTL of 1 ns: every request reads the fleet afresh, as the first
	// request after the cache expires does.
	srv, err := New(Config{Ops: o, Store: st, Auth: a, SnapshotTTL: time.Nanosecond})
	if err != nil {
		return nil, err
	}
	return &benchFleet{srv: srv, zk: s, store: st, http: httptest.NewServer(srv.Handler()), trips: trips, token: tok, queues: len(names)}, nil
}

// BenchmarkConsoleQueues10k times one refresh of the queues page and of
// GET /api/v1/queues (sorted by lag, first 100) over 10,000 queues, each
// reading the whole fleet afresh, and counts the Redis round trips one
// refresh makes.
func BenchmarkConsoleQueues10k(b *testing.B) {
	f := setupBench(b)
	for _, c := range []struct{ name, path, accept string }{
		{"api", "/api/v1/queues?sort=lag&order=desc&per_page=100", "application/json"},
		{"page", "/queues?sort=lag&order=desc&per_page=100", "text/html"},
	} {
		b.Run(c.name, func(b *testing.B) {
			var total time.Duration
			var trips int64
			for b.Loop() {
				req, _ := http.NewRequest("GET", f.http.URL+c.path, nil)
				req.Header.Set("Authorization", "Bearer "+f.token)
				req.Header.Set("Accept", c.accept)
				before := f.trips.n.Load()
				start := time.Now()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				total += time.Since(start)
				trips += f.trips.n.Load() - before
				if resp.StatusCode != 200 {
					b.Fatalf("GET %s: %d %s", c.path, resp.StatusCode, body)
				}
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/refresh")
			b.ReportMetric(float64(trips)/float64(b.N), "redis-round-trips/refresh")
			b.ReportMetric(float64(f.queues), "queues")
			b.ReportMetric(0, "ns/op")
		})
	}
}
