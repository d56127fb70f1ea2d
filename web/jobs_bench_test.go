package web

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/jobs"
	"github.com/drover-dev/drover/queue"
)

// BenchmarkHTTPEnqueueBatch100: jobs/s through POST /api/v1/queues/{q}/jobs
// in batches of 100 (one client, keep-alive, a producer token, audited),
// against the Go client's EnqueueBatch of 100 on the same Redis, alternating
// in the same run. ratio = HTTP / Go client.
func BenchmarkHTTPEnqueueBatch100(b *testing.B) {
	const batch, rounds, perRound = 100, 5, 40
	ctx := context.Background()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: testenv.ZooKeeper(b).Addrs, Root: testenv.Chroot(b), SessionTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{testenv.Redis(b).Addr}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rdb.Close() })
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
	var body bytes.Buffer
	body.WriteString(`{"jobs":[`)
	for i := 0; i < batch; i++ {
		if i > 0 {
			body.WriteByte(',')
		}
		body.WriteString(`{"task":"send-welcome","args":{"user":42,"plan":"pro"}}`)
	}
	body.WriteString(`]}`)
	payload := body.Bytes()
	client := &http.Client{}
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
	enqueue := func() {
		msgs := make([]*drover.Message, batch)
		for i := range msgs {
			msgs[i] = &drover.Message{Queue: "bench", Task: "send-welcome", Args: []byte(`{"user":42,"plan":"pro"}`)}
		}
		if _, err := st.Producer().EnqueueBatch(ctx, msgs); err != nil {
			b.Fatal(err)
		}
	}
	post() // warm up: connection, script cache
	enqueue()
	var dHTTP, dGo time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			start := time.Now()
			for k := 0; k < perRound; k++ {
				post()
			}
			dHTTP += time.Since(start)
			start = time.Now()
			for k := 0; k < perRound; k++ {
				enqueue()
			}
			dGo += time.Since(start)
		}
	}
	total := float64(b.N * rounds * perRound * batch)
	b.ReportMetric(total/dHTTP.Seconds(), "http-jobs/s")
	b.ReportMetric(total/dGo.Seconds(), "client-jobs/s")
	b.ReportMetric(dGo.Seconds()/dHTTP.Seconds(), "ratio")
}
