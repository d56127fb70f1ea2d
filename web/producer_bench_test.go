package web

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/jobs"
	"github.com/drover-dev/drover/queue"
	"github.com/redis/go-redis/v9"
)

// sentCounter is a go-redis hook counting the commands a client sends and
// its round trips (a pipeline is one).
type sentCounter struct{ cmds, trips atomic.Int64 }

func (c *sentCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *sentCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.cmds.Add(1)
		c.trips.Add(1)
		return next(ctx, cmd)
	}
}
func (c *sentCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.cmds.Add(int64(len(cmds)))
		c.trips.Add(1)
		return next(ctx, cmds)
	}
}

// BenchmarkHTTPEnqueueOne: one job per POST /api/v1/queues/{q}/jobs to a
// queue enqueued to before, the HTTP producer's commonest request (issue
// 42): the Redis commands and round trips the console sends per request,
// the commands Redis runs (INFO commandstats: scripts and what they call)
// and the CPU of this process (console and client) per request.
func BenchmarkHTTPEnqueueOne(b *testing.B) {
	ctx := context.Background()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: testenv.ZooKeeper(b).Addrs, Root: testenv.Chroot(b), SessionTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	srvRedis := testenv.NewRedis(b, testenv.RedisOptions{})
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{srvRedis.Addr}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rdb.Close() })
	sent := &sentCounter{}
	rdb.AddHook(sent)
	st, err := queue.New(queue.Config{Client: rdb, Prefix: testenv.Prefix(b)})
	if err != nil {
		b.Fatal(err)
	}
	tok, spec, _ := auth.NewToken("bench", auth.Producer)
	a, err := auth.New(auth.Config{Tokens: []string{spec}})
	if err != nil {
		b.Fatal(err)
	}
	o, err := ops.New(ops.Config{ZK: s, Store: st})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := New(Config{Ops: o, Store: st, Auth: a})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.RouteJobs(JobsConfig{Store: st, Lookup: &jobs.Lookup{Store: st.Jobs(), Fleet: jobs.SessionFleet{Session: s}},
		Queues: s.Queues()}); err != nil {
		b.Fatal(err)
	}
	if err := s.Queues().Create(ctx, drover.QueueConfig{Name: "bench", Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}); err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	b.Cleanup(hs.Close)
	payload := []byte(`{"task":"send-welcome","args":{"user":42,"plan":"pro"}}`)
	client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{}).DialContext, MaxIdleConnsPerHost: 1}}
	post := func() {
		req, _ := http.NewRequest("POST", hs.URL+"/api/v1/queues/bench/jobs", bytes.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("POST: %s: %s", resp.Status, out)
		}
	}
	post() // warm up: connection, registry, script cache
	post()
	info := redis.NewClient(&redis.Options{Addr: srvRedis.Addr})
	b.Cleanup(func() { info.Close() })
	if err := info.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	cmds0, trips0 := sent.cmds.Load(), sent.trips.Load()
	cpu0 := processCPUTime()
	b.ResetTimer()
	for range b.N {
		post()
	}
	b.StopTimer()
	cpu := processCPUTime() - cpu0
	n := float64(b.N)
	b.ReportMetric(float64(sent.cmds.Load()-cmds0)/n, "sent-cmds/req")
	b.ReportMetric(float64(sent.trips.Load()-trips0)/n, "round-trips/req")
	b.ReportMetric(float64(serverCommands(b, info))/n, "redis-cmds/req")
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/req")
}

// serverCommands is the count of commands the server ran (INFO
// commandstats: script calls and the commands they call), INFO and CONFIG
// left out.
func serverCommands(b *testing.B, rdb *redis.Client) int64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" || strings.HasPrefix(name, "cmdstat_config") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		c, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			b.Fatal(fmt.Errorf("commandstats %q: %w", line, err))
		}
		total += c
	}
	return total
}

// processCPUTime is the user+system CPU time of this process so far.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
