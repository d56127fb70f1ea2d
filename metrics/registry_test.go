package metrics_test

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/metrics"
)

func newPrometheus(t *testing.T, cfg metrics.SetupConfig) *metrics.Registry {
	t.Helper()
	cfg.Prometheus = true
	r, err := metrics.Setup(cfg)
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

func TestPrometheusExportsDocumentedNamesAndExactValues(t *testing.T) {
	t.Parallel()
	r := newPrometheus(t, metrics.SetupConfig{})
	var rec metrics.Recorder = r
	q, task := metrics.L("queue", "q"), metrics.L("task", "t")
	for range 100 {
		rec.IncrCounter(metrics.TasksTotal, 1, q, task, metrics.L("outcome", "success"))
	}
	for range 5 {
		rec.IncrCounter(metrics.TasksTotal, 1, q, task, metrics.L("outcome", "failure"))
		rec.IncrCounter(metrics.DeadTotal, 1, q, metrics.L("reason", "failure"))
	}
	rec.SetGauge(metrics.Lag, 20, q)
	rec.SetGauge(metrics.OldestAge, 12.5, q)
	rec.SetGauge(metrics.InFlight, 3)
	rec.SetGauge(metrics.Members, 2)
	for _, ms := range []float32{10, 20, 30} {
		rec.AddSample(metrics.TaskDuration, ms, q, task)
	}

	s := scrapeRegistry(t, r)
	s.want(t, `drover_tasks_total{group="q",outcome="success",task="t"}`, "100")
	s.want(t, `drover_tasks_total{group="q",outcome="failure",task="t"}`, "5")
	s.want(t, `drover_dead_letters_total{group="q",reason="failure"}`, "5")
	s.want(t, `drover_lag{queue="q"}`, "20")
	s.want(t, `drover_oldest_age_seconds{queue="q"}`, "12.5")
	s.want(t, `drover_in_flight`, "3")
	s.want(t, `drover_cluster_members`, "2")
	s.want(t, `drover_task_duration_ms_count{group="q",task="t"}`, "3")
	s.want(t, `drover_task_duration_ms_sum{group="q",task="t"}`, "60")
	s.want(t, `drover_task_duration_ms_bucket{group="q",task="t",le="10"}`, "1")
	s.want(t, `drover_task_duration_ms_bucket{group="q",task="t",le="25"}`, "2")
	s.want(t, `drover_task_duration_ms_bucket{group="q",task="t",le="+Inf"}`, "3")
	for range 4 {
		rec.AddSample(metrics.FetchDuration, 2)
	}
	s = scrapeRegistry(t, r)
	s.want(t, `drover_fetch_ms{quantile="0.5"}`, "2")
	// Unlabelled counters are exported at 0 before their first event.
	s.want(t, `drover_rebalances_total`, "0")
	s.want(t, `drover_session_expiries_total`, "0")

	for family, kind := range map[string]string{
		"drover_tasks_total": "counter", "drover_lag": "gauge", "drover_task_duration_ms": "histogram",
		"drover_fetch_ms": "summary",
	} {
		if s.types[family] != kind {
			t.Errorf("# TYPE %s: want %s, have %q", family, kind, s.types[family])
		}
	}
	wantHelp := "Task attempts that ended, by outcome (success, retry, failure, timeout, aborted)."
	if s.help["drover_tasks_total"] != wantHelp {
		t.Errorf("# HELP drover_tasks_total: want %q, have %q", wantHelp, s.help["drover_tasks_total"])
	}
	// The Go runtime and process collectors ride along.
	if _, ok := s.types["go_goroutines"]; !ok {
		t.Errorf("want go_goroutines in the scrape")
	}
}

func TestEveryExportedDroverFamilyIsInTheCatalogWithItsKind(t *testing.T) {
	t.Parallel()
	r := newPrometheus(t, metrics.SetupConfig{})
	for _, d := range metrics.Catalog() {
		var labels []metrics.Label
		for _, l := range d.Labels {
			labels = append(labels, metrics.L(l, "x"))
		}
		switch d.Kind {
		case metrics.Counter:
			r.IncrCounter(d.Name, 1, labels...)
		case metrics.Gauge:
			r.SetGauge(d.Name, 1, labels...)
		case metrics.Summary, metrics.Histogram:
			r.AddSample(d.Name, 1, labels...)
		}
	}
	s := scrapeRegistry(t, r)
	kinds := map[string]string{}
	for _, d := range metrics.Catalog() {
		kinds[metrics.PrometheusName(d.Name)] = string(d.Kind)
	}
	for family, typ := range s.types {
		if !strings.HasPrefix(family, "drover_") {
			continue
		}
		if kinds[family] != typ {
			t.Errorf("exported %s %s: want the catalog's kind, have %q", typ, family, kinds[family])
		}
		delete(kinds, family)
	}
	for family := range kinds {
		t.Errorf("catalog metric %s: want it exported, have nothing", family)
	}
}

func TestExpiringGaugesAreForgottenAndTheRestKept(t *testing.T) {
	t.Parallel()
	// A retention of 1ns has passed by the time of any scrape.
	r := newPrometheus(t, metrics.SetupConfig{GaugeRetention: time.Nanosecond})
	q := metrics.L("queue", "q")
	r.SetGauge(metrics.Lag, 7, q)
	r.SetGauge(metrics.UnownedQueues, 1)
	r.SetGauge(metrics.InFlight, 4)
	r.IncrCounter(metrics.CommitsTotal, 1, q)
	r.AddSample(metrics.FetchDuration, 2)
	r.AddSample(metrics.QueueLatency, 2, q)

	s := scrapeRegistry(t, r)
	for _, gone := range []string{`drover_lag{queue="q"}`, `drover_group_lag{group="q"}`, `drover_cluster_unowned_queues`} {
		if v, ok := s.samples[gone]; ok {
			t.Errorf("%s: want it expired, have %s", gone, v)
		}
	}
	s.want(t, `drover_in_flight`, "4")
	s.want(t, `drover_commits_total{group="q"}`, "1")
	s.want(t, `drover_fetch_ms_count`, "1")
	s.want(t, `drover_queue_latency_ms_count{group="q"}`, "1")

	// The same gauges with the default retention stay.
	r2 := newPrometheus(t, metrics.SetupConfig{})
	r2.SetGauge(metrics.Lag, 7, q)
	scrapeRegistry(t, r2).want(t, `drover_lag{queue="q"}`, "7")
}

func TestRegistriesDoNotShareState(t *testing.T) {
	t.Parallel()
	a := newPrometheus(t, metrics.SetupConfig{})
	b := newPrometheus(t, metrics.SetupConfig{})
	a.IncrCounter(metrics.CommitsTotal, 1, metrics.L("queue", "only-a"))
	if v, ok := scrapeRegistry(t, b).samples[`drover_commits_total{group="only-a"}`]; ok {
		t.Fatalf("want registry b without a's counter, have %s", v)
	}
	scrapeRegistry(t, a).want(t, `drover_commits_total{group="only-a"}`, "1")
}

func TestStatsdReceivesDroverKeysWithLabelValues(t *testing.T) {
	t.Parallel()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen udp: %v", err)
	}
	defer pc.Close()
	r, err := metrics.Setup(metrics.SetupConfig{Statsd: pc.LocalAddr().String()})
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	defer r.Close()
	if r.Handler() != nil {
		t.Errorf("want no /metrics handler without Prometheus")
	}
	r.IncrCounter(metrics.TasksTotal, 1, metrics.L("queue", "emails"), metrics.L("task", "send"), metrics.L("outcome", "success"))
	r.SetGauge(metrics.Lag, 42, metrics.L("queue", "emails"))

	want := []string{"drover.tasks_total.emails.send.success:1.000000|c", "drover.lag.emails:42.000000|g"}
	var got strings.Builder
	buf := make([]byte, 2048)
	for !containsAll(got.String(), want) {
		pc.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			t.Fatalf("want statsd lines %q, have %q (%v)", want, got.String(), err)
		}
		got.Write(buf[:n])
	}
	r.Close()
	r.Close()                                                     // idempotent
	r.IncrCounter(metrics.TasksTotal, 1, metrics.L("queue", "x")) // after Close: dropped, no panic
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestInmemDumpsOnSignal sends SIGUSR2 (not SIGUSR1, so a stray dump
// request to the test binary stays harmless) to the test process.
func TestInmemDumpsOnSignal(t *testing.T) {
	out := &syncBuffer{}
	r, err := metrics.Setup(metrics.SetupConfig{
		// Retained for a minute, not a second: the values must still be in
		// a kept interval when the first dump runs, which a test starved
		// for a second on a loaded machine could miss.
		Inmem: true, InmemInterval: 10 * time.Millisecond, InmemRetain: time.Minute,
		DumpSignal: syscall.SIGUSR2, DumpTo: out,
	})
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	defer r.Close()
	r.IncrCounter(metrics.TasksTotal, 1, metrics.L("queue", "q"), metrics.L("task", "t"), metrics.L("outcome", "success"))
	r.SetGauge(metrics.Lag, 9, metrics.L("queue", "q"))

	// The dump leaves out the bucket still being filled, so ask until the
	// one holding these values is complete.
	want := []string{"[C] 'drover.tasks_total.q.t.success': Count: 1", "[G] 'drover.lag.q': 9.000"}
	deadline := time.Now().Add(time.Minute)
	for !containsAll(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("want a dump containing %q, have:\n%s", want, out.String())
		}
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR2); err != nil {
			t.Fatalf("signal self: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSetupRejectsBadDurations(t *testing.T) {
	t.Parallel()
	for _, cfg := range []metrics.SetupConfig{
		{GaugeRetention: -time.Second},
		{SeriesRetention: -time.Second},
		{Inmem: true, InmemInterval: time.Minute, InmemRetain: time.Second},
	} {
		if r, err := metrics.Setup(cfg); err == nil {
			r.Close()
			t.Errorf("setup %+v: want an error, have none", cfg)
		}
	}
}

func TestNoSinksRecordsNothingAndServesNothing(t *testing.T) {
	t.Parallel()
	r, err := metrics.Setup(metrics.SetupConfig{})
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	defer r.Close()
	r.IncrCounter(metrics.TasksTotal, 1)
	r.SetGauge(metrics.Lag, 1)
	r.AddSample(metrics.FetchDuration, 1)
	if r.Handler() != nil {
		t.Fatalf("want no handler without the Prometheus sink, have %v", r.Handler())
	}
}

func TestOwnSeriesTakeTheCatalogLabelsInAnyOrder(t *testing.T) {
	t.Parallel()
	r := newPrometheus(t, metrics.SetupConfig{})
	// Given in another order than the catalog's, with a label the catalog
	// does not list (dropped) and one missing (empty).
	r.IncrCounter(metrics.TasksTotal, 2, metrics.L("task", "t"), metrics.L("outcome", "success"), metrics.L("queue", "q"))
	r.IncrCounter(metrics.TasksTotal, 3, metrics.L("queue", "q"), metrics.L("task", "t"), metrics.L("outcome", "success"))
	r.IncrCounter(metrics.CommitsTotal, 1, metrics.L("queue", "q"), metrics.L("zone", "z"))
	r.IncrCounter(metrics.TasksTotal, 1, metrics.L("queue", "q2"))
	r.IncrCounter(metrics.TasksTotal, -1, metrics.L("queue", "q2")) // counters only go up: dropped
	// More labels than the fast path takes: not exported, no panic.
	r.IncrCounter(metrics.CommitsTotal, 1, metrics.L("a", "1"), metrics.L("b", "2"), metrics.L("c", "3"), metrics.L("d", "4"), metrics.L("queue", "many"))

	s := scrapeRegistry(t, r)
	s.want(t, `drover_tasks_total{group="q",outcome="success",task="t"}`, "5")
	s.want(t, `drover_commits_total{group="q"}`, "1")
	s.want(t, `drover_tasks_total{group="q2",outcome="",task=""}`, "1")
	if v, ok := s.samples[`drover_commits_total{group="many"}`]; ok {
		t.Errorf("want no series for a call with too many labels, have %s", v)
	}
}

// TestTaskMetricsDoNotAllocate holds the per-task cost down: the calls a
// worker makes per task (oneTask) allocate nothing once their series exist,
// with Prometheus alone and with the in-memory dump on (before: 31 and 74
// allocations with labels given as variadic arguments, then 0 and 18 while
// go-metrics' InmemSink took the catalog's counters and timers).
func TestTaskMetricsDoNotAllocate(t *testing.T) {
	for _, tc := range []struct {
		cfg  metrics.SetupConfig
		most float64
	}{
		{metrics.SetupConfig{Prometheus: true}, 0},
		{metrics.SetupConfig{Prometheus: true, Inmem: true}, 0},
	} {
		r, err := metrics.Setup(tc.cfg)
		if err != nil {
			t.Fatalf("setup: %v", err)
		}
		defer r.Close()
		q := []metrics.Label{metrics.L("queue", "emails")}
		qt := []metrics.Label{metrics.L("queue", "emails"), metrics.L("task", "send")}
		qto := []metrics.Label{metrics.L("queue", "emails"), metrics.L("task", "send"), metrics.L("outcome", "success")}
		allocs := testing.AllocsPerRun(1000, func() {
			r.AddSample(metrics.QueueLatency, 3, q...)
			r.AddSample(metrics.TaskDuration, 12, qt...)
			r.IncrCounter(metrics.TasksTotal, 1, qto...)
		})
		if allocs > tc.most {
			t.Errorf("prometheus %v inmem %v: want at most %v allocations per task, have %v", tc.cfg.Prometheus, tc.cfg.Inmem, tc.most, allocs)
		}
		t.Logf("prometheus %v inmem %v: %v allocations per task", tc.cfg.Prometheus, tc.cfg.Inmem, allocs)
	}
}

// TestIdleQueueSeriesExpireAndTheRestStay: a scrape sweeps at most once
// per retention; a labelled series goes at the second sweep without a value,
// one recorded in between stays, an unlabelled one never goes.
func TestIdleQueueSeriesExpireAndTheRestStay(t *testing.T) {
	t.Parallel()
	advance, now := fakeClock()
	r := newPrometheus(t, metrics.SetupConfig{SeriesRetention: time.Hour, Now: now, Inmem: true})
	busy, idle := metrics.L("queue", "busy"), metrics.L("queue", "idle")
	for _, q := range []metrics.Label{busy, idle} {
		r.IncrCounter(metrics.CommitsTotal, 1, q)
		r.AddSample(metrics.QueueLatency, 4, q)
	}
	r.IncrCounter(metrics.RebalancesTotal, 1)
	r.AddSample(metrics.CommitDuration, 3)

	advance(time.Hour)
	s := scrapeRegistry(t, r) // first sweep: everything was used before it
	s.want(t, `drover_commits_total{group="idle"}`, "1")
	s.want(t, `drover_queue_latency_ms_count{group="idle"}`, "1")

	r.IncrCounter(metrics.CommitsTotal, 1, busy)
	r.AddSample(metrics.QueueLatency, 4, busy)
	advance(time.Hour - time.Second)
	s = scrapeRegistry(t, r) // within the retention of the first: no sweep
	s.want(t, `drover_commits_total{group="idle"}`, "1")

	advance(time.Second)
	s = scrapeRegistry(t, r) // second sweep: idle has gone
	for _, gone := range []string{`drover_commits_total{group="idle"}`, `drover_queue_latency_ms_count{group="idle"}`} {
		if v, ok := s.samples[gone]; ok {
			t.Errorf("%s: want it expired, have %s", gone, v)
		}
	}
	s.want(t, `drover_commits_total{group="busy"}`, "2")
	s.want(t, `drover_queue_latency_ms_count{group="busy"}`, "2")
	s.want(t, `drover_rebalances_total`, "1")
	s.want(t, `drover_commit_ms_count`, "1")

	// An expired series comes back from 0.
	r.IncrCounter(metrics.CommitsTotal, 1, idle)
	scrapeRegistry(t, r).want(t, `drover_commits_total{group="idle"}`, "1")
}

// fakeClock is a clock for SetupConfig.Now that moves only when advanced.
func fakeClock() (advance func(time.Duration), now func() time.Time) {
	var mu sync.Mutex
	clock := time.Unix(1_000_000, 0)
	advance = func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(d)
	}
	now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	}
	return advance, now
}

// TestExpiringGaugesGoAfterTheGaugeRetention: a per-queue or cluster gauge
// not set again within GaugeRetention is gone at the next scrape, one set
// again stays; a per-process gauge stays.
func TestExpiringGaugesGoAfterTheGaugeRetention(t *testing.T) {
	t.Parallel()
	advance, now := fakeClock()
	r := newPrometheus(t, metrics.SetupConfig{GaugeRetention: 2 * time.Minute, Now: now})
	q, q2 := metrics.L("queue", "q"), metrics.L("queue", "q2")
	r.SetGauge(metrics.Lag, 5, q)
	r.SetGauge(metrics.Lag, 6, q2)
	r.SetGauge(metrics.Members, 3)
	r.SetGauge(metrics.InFlight, 2)

	advance(2 * time.Minute)
	s := scrapeRegistry(t, r) // exactly the retention: kept
	s.want(t, `drover_lag{queue="q"}`, "5")
	s.want(t, `drover_cluster_members`, "3")

	r.SetGauge(metrics.Lag, 7, q2)
	advance(time.Second)
	s = scrapeRegistry(t, r)
	for _, gone := range []string{`drover_lag{queue="q"}`, `drover_cluster_members`} {
		if v, ok := s.samples[gone]; ok {
			t.Errorf("%s: want it expired, have %s", gone, v)
		}
	}
	s.want(t, `drover_lag{queue="q2"}`, "7")
	s.want(t, `drover_in_flight`, "2")

	r.SetGauge(metrics.Lag, 1, q) // comes back
	scrapeRegistry(t, r).want(t, `drover_lag{queue="q"}`, "1")
}

// Defect (issue 40): the group of every queue that recorded a task was
// cached, up to 200,000 queues at about 260 bytes each, so a worker that
// ran one task of each of 100,000 keys during a churn kept 26 MB for
// them after the keys were retired. Without group patterns or a hook the
// group is the name's prefix: nothing is kept per queue.
func TestRecordingManyQueuesKeepsNothingPerQueue(t *testing.T) {
	r, err := metrics.Setup(metrics.SetupConfig{Prometheus: true, Inmem: true})
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	defer r.Close()
	task, ok := metrics.L("task", "send"), metrics.L("outcome", "success")
	record := func(from, to int) {
		for i := from; i < to; i++ {
			q := metrics.L("queue", fmt.Sprintf("c-key-%07d", i))
			r.AddSample(metrics.QueueLatency, 3, q)
			r.IncrCounter(metrics.TasksTotal, 1, q, task, ok)
		}
	}
	record(0, 1000) // every group and series the rest will use
	before := liveHeap()
	const n = 100_000
	record(1000, 1000+n)
	after := liveHeap()
	runtime.KeepAlive(r)
	if per := (float64(after) - float64(before)) / n; per > 8 {
		t.Fatalf("after tasks of %d more queues: want at most 8 bytes a queue kept, have %.1f", n, per)
	}
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
