package e2e

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// scrape returns the worker's /metrics as series → value, where a series is
// written as in the exposition format: name{label="v",…}; nil while the
// worker is not a member yet.
func (f *fleet) scrape(t *testing.T, name string) map[string]float64 {
	t.Helper()
	ms, err := f.zk.Group().Members(context.Background())
	if err != nil {
		return nil
	}
	for _, m := range ms {
		if m.Member.Name != name {
			continue
		}
		resp, err := http.Get("http://" + m.Member.AdminAddr + "/metrics")
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		out := map[string]float64{}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			i := strings.LastIndexByte(line, ' ')
			v, err := strconv.ParseFloat(line[i+1:], 64)
			if err == nil {
				out[line[:i]] = v
			}
		}
		return out
	}
	return nil
}

// A worker that ran 100 successful tasks and 5 that failed until they were
// dead-lettered, with 20 messages pending behind a pause: its /metrics says
// exactly that, and lag equals the messages after the committed offset.
func TestMetricsOfAWorkerThatRanRealTasks(t *testing.T) {
	f := newFleet(t, 10*time.Second)
	ctx := context.Background()
	if err := f.zk.Queues().Create(ctx, drover.QueueConfig{Name: "m", MaxAttempts: 2, Concurrency: 4,
		Backoff: drover.Backoff{Base: drover.Duration(10 * time.Millisecond), Max: drover.Duration(20 * time.Millisecond)},
		Tasks: map[string]drover.TaskRoute{
			"ok":  {Command: []string{"/bin/true"}},
			"bad": {Command: []string{"/bin/false"}},
		}}); err != nil {
		t.Fatal(err)
	}
	f.startWorker("mw", "DROVER_METRICS_PROMETHEUS=true")
	var msgs []*drover.Message
	for i := 0; i < 100; i++ {
		msgs = append(msgs, &drover.Message{Queue: "m", Task: "ok"})
	}
	for i := 0; i < 5; i++ {
		msgs = append(msgs, &drover.Message{Queue: "m", Task: "bad"})
	}
	if _, err := f.store.Producer().EnqueueBatch(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	const (
		success = `drover_tasks_total{group="m",outcome="success",task="ok"}`
		failure = `drover_tasks_total{group="m",outcome="failure",task="bad"}`
		dead    = `drover_dead_letters_total{group="m",reason="failure"}`
	)
	waitFor(t, 2*time.Minute, "100 successes and 5 dead letters", func() bool {
		m := f.scrape(t, "mw")
		return m[success] == 100 && m[dead] == 5
	})
	// Pause the queue, then leave 20 messages pending.
	if err := f.zk.Pauses().Set(ctx, drover.PauseQueue, "m", drover.Pause{By: "test", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the pause to reach the worker", func() bool {
		st := f.state("mw")
		return st != nil && len(st.Worker.Queues) == 1 && st.Worker.Queues[0].Paused
	})
	var pending []*drover.Message
	for i := 0; i < 20; i++ {
		pending = append(pending, &drover.Message{Queue: "m", Task: "ok"})
	}
	if _, err := f.store.Producer().EnqueueBatch(ctx, pending); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the lag gauge to show the pending messages", func() bool {
		return f.scrape(t, "mw")[`drover_lag{queue="m"}`] == 20
	})
	m := f.scrape(t, "mw")
	want := map[string]float64{
		success: 100, failure: 10, dead: 5,
		`drover_lag{queue="m"}`: 20, `drover_dead{queue="m"}`: 5, `drover_delayed{queue="m"}`: 0,
	}
	for series, v := range want {
		if m[series] != v {
			t.Errorf("%s: want %g, have %g", series, v, m[series])
		}
	}
	// lag equals the messages after the committed offset, counted in Redis,
	// once the worker's next commit (every commit interval, for all its
	// queues) has landed.
	var after []drover.LogEntry
	var committed drover.Position
	waitFor(t, time.Minute, "the committed offset to cover the finished messages", func() bool {
		off, err := f.zk.Claims().Offset(ctx, "m")
		if err != nil {
			t.Fatal(err)
		}
		committed = off.Offset.Position
		after, err = f.store.Log().ReadAfter(ctx, "m", committed, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return float64(len(after)) == m[`drover_lag{queue="m"}`]
	})
	if m[`drover_oldest_age_seconds{queue="m"}`] <= 0 {
		t.Errorf("oldest age: want > 0 with messages pending, have %g", m[`drover_oldest_age_seconds{queue="m"}`])
	}
}
