package metrics

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	gometrics "github.com/hashicorp/go-metrics"
)

// lastUpdated is the wall-clock part of an aggregate's line, which the
// injected clock does not set.
var lastUpdated = regexp.MustCompile(` LastUpdated: .*$`)

// dumpLines is r's dump without the LastUpdated times.
func dumpLines(t *testing.T, r *Registry) []string {
	t.Helper()
	var b strings.Builder
	if err := r.writeDump(&b); err != nil {
		t.Fatalf("dump: %v", err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if l != "" {
			out = append(out, lastUpdated.ReplaceAllString(l, ""))
		}
	}
	return out
}

// A catalog counter or timer aggregates per interval in its own entry: the
// dump has one line per series and completed interval, oldest first, in
// go-metrics' format; the interval being filled is left out, and a bucket
// reused for a later interval starts again from nothing.
func TestTheDumpAggregatesCatalogSeriesPerInterval(t *testing.T) {
	t0 := time.Date(2030, 6, 3, 4, 5, 0, 0, time.UTC)
	now := t0
	r, err := Setup(SetupConfig{Inmem: true, Now: func() time.Time { return now }, DumpSignal: syscall.SIGUSR2})
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	defer r.Close()
	q, task, ok := L("queue", "q"), L("task", "t"), L("outcome", "success")
	at := func(d time.Duration) string { return "[" + time.Unix(0, t0.Add(d).UnixNano()).String() + "]" }

	r.IncrCounter(TasksTotal, 1, q, task, ok)
	r.IncrCounter(TasksTotal, 1, q, task, ok)
	r.AddSample(TaskDuration, 10, q, task)
	r.AddSample(TaskDuration, 20, q, task)
	now = t0.Add(12 * time.Second)
	r.IncrCounter(TasksTotal, 1, q, task, ok)
	now = t0.Add(25 * time.Second)
	r.IncrCounter(TasksTotal, 5, q, task, ok) // the current interval: not dumped yet

	want := []string{
		at(0) + "[C] 'drover.tasks_total.q.t.success': Count: 2 Sum: 2.000",
		at(0) + "[S] 'drover.task_duration_ms.q.t': Count: 2 Min: 10.000 Mean: 15.000 Max: 20.000 Stddev: 7.071 Sum: 30.000",
		at(10*time.Second) + "[C] 'drover.tasks_total.q.t.success': Count: 1 Sum: 1.000",
	}
	if got := dumpLines(t, r); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("dump:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A minute later the interval at 0 s is out of the kept minute, and
	// its bucket (the same slot of the ring) holds the new interval alone.
	now = t0.Add(61 * time.Second)
	r.IncrCounter(TasksTotal, 1, q, task, ok)
	now = t0.Add(75 * time.Second)
	want = []string{
		at(20*time.Second) + "[C] 'drover.tasks_total.q.t.success': Count: 1 Sum: 5.000",
		at(60*time.Second) + "[C] 'drover.tasks_total.q.t.success': Count: 1 Sum: 1.000",
	}
	if got := dumpLines(t, r); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("dump a minute later:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Lines from go-metrics' InmemSink (gauges, names outside the catalog) are
// named as its InmemSignal names them: label values folded in, spaces and
// colons replaced.
func TestInmemSinkLinesKeepInmemSignalsNames(t *testing.T) {
	t0 := time.Date(2030, 6, 3, 4, 5, 0, 0, time.UTC)
	intv := gometrics.NewIntervalMetrics(t0)
	intv.Gauges["k"] = gometrics.GaugeValue{Name: "drover.lag", Value: 9, Labels: []gometrics.Label{{Name: "queue", Value: "a b:c"}}}
	agg := &gometrics.AggregateSample{}
	agg.Ingest(2, 10)
	intv.Counters["c"] = gometrics.SampledValue{Name: "drover.other", AggregateSample: agg}
	got := appendIntervalLines(nil, t0.UnixNano(), intv)
	if len(got) != 2 || got[0].kind != 'G' || got[0].name != "drover.lag.a_b_c" || got[0].text != "9.000" ||
		got[1].kind != 'C' || got[1].name != "drover.other" || !strings.HasPrefix(got[1].text, "Count: 1 Sum: 2.000") {
		t.Fatalf("lines: %+v", got)
	}
}
