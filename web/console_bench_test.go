package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

// BenchmarkConsoleManyQueues is issue 34's console at 100,000 queues
// (DROVER_BENCH_CONSOLE_QUEUES overrides the count, for a quick check):
// that many configured queues in ten groups ("g3-04711"), one message
// each, on the real ZooKeeper and Redis, behind the real handler (token
// auth, rendering), with the server's Run loop serving the snapshot
// (Config.ServeStale). It reports:
//
//   - snapshot-ms: one full read of the fleet (what Run does in the
//     background; the first request after start waits for it);
//   - overview-ms, lagging-ms: the overview page and the top-lagging view
//     (/queues?view=lagging) answered from the snapshot;
//   - search-ms: /queues?match=g3-0471 (a prefix), which reads the names
//     and only the matches, not the snapshot;
//   - bulk-pause-ms: POST /api/v1/bulk/pause of the group selected by
//     prefix (a tenth of the queues: 10,000 at 100,000), audited once; the
//     pause flags are then counted to check it.
func BenchmarkConsoleManyQueues(b *testing.B) {
	n := 100_000
	if v := os.Getenv("DROVER_BENCH_CONSOLE_QUEUES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10 {
			b.Fatalf("DROVER_BENCH_CONSOLE_QUEUES=%q: want a number ≥ 10", v)
		}
	}
	ctx := context.Background()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: testenv.ZooKeeper(b).Addrs, Root: testenv.Chroot(b), SessionTimeout: 20 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{testenv.Redis(b).Addr}})
	if err != nil {
		b.Fatal(err)
	}
	defer rdb.Close()
	st, err := queue.New(queue.Config{Client: rdb, Prefix: testenv.Prefix(b)})
	if err != nil {
		b.Fatal(err)
	}
	per := n / 10
	var cfgs []drover.QueueConfig
	var msgs []*drover.Message
	for i := range n {
		q := fmt.Sprintf("g%d-%05d", i/per, i%per)
		cfgs = append(cfgs, drover.QueueConfig{Name: q, Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}})
		msgs = append(msgs, &drover.Message{Queue: q, Task: "t"})
	}
	if _, err := s.Queues().CreateMany(ctx, cfgs); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(msgs); i += 1000 {
		if _, err := st.Producer().EnqueueBatch(ctx, msgs[i:min(i+1000, len(msgs))]); err != nil {
			b.Fatal(err)
		}
	}
	tok, spec, err := auth.NewToken("bench", auth.Operator)
	if err != nil {
		b.Fatal(err)
	}
	a, err := auth.New(auth.Config{Tokens: []string{spec}})
	if err != nil {
		b.Fatal(err)
	}
	o, err := ops.New(ops.Config{ZK: s, Store: st})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := New(Config{Ops: o, Store: st, Auth: a, SnapshotTTL: time.Hour}) // the background read is timed on its own
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { srv.Run(rctx); close(done) }()
	defer func() { cancel(); <-done }()

	get := func(path string) time.Duration {
		req, _ := http.NewRequest("GET", hs.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Accept", "text/html")
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("GET %s: %d %.300s", path, resp.StatusCode, body)
		}
		return time.Since(start)
	}
	var snapshot, overview, lagging, search, bulk time.Duration
	prefix := fmt.Sprintf("g3-%04d", per/10/10) // a few queues of group 3
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := o.Members().Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
		snapshot += time.Since(start)
		get("/") // the first request waits for the snapshot; the timed ones do not
		overview += get("/")
		lagging += get("/queues?view=lagging")
		search += get("/queues?match=" + prefix)

		body := fmt.Sprintf(`{"match":"g%d-","reason":"bench"}`, i%10)
		req, _ := http.NewRequest("POST", hs.URL+"/api/v1/bulk/pause", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		start = time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		bulk += time.Since(start)
		if resp.StatusCode != 200 || !strings.Contains(string(out), fmt.Sprintf(`"changed": %d`, per)) {
			b.Fatalf("bulk pause: want %d paused, have %d %s", per, resp.StatusCode, out)
		}
		ps, err := s.Pauses().Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Pauses().ClearQueues(ctx, namesOf(ps)); err != nil {
			b.Fatal(err)
		}
		if len(ps.Queues) != per {
			b.Fatalf("after the bulk pause: want %d pause flags, have %d", per, len(ps.Queues))
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(float64(n), "queues")
	b.ReportMetric(ms(snapshot), "snapshot-ms")
	b.ReportMetric(ms(overview), "overview-ms")
	b.ReportMetric(ms(lagging), "lagging-ms")
	b.ReportMetric(ms(search), "search-ms")
	b.ReportMetric(ms(bulk), "bulk-pause-ms")
	b.ReportMetric(float64(per), "bulk-queues")
	b.ReportMetric(0, "ns/op")
}

func namesOf(ps coordinator.PauseSet) []string {
	out := make([]string, 0, len(ps.Queues))
	for q := range ps.Queues {
		out = append(out, q)
	}
	return out
}
