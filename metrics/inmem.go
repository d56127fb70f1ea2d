package metrics

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	gometrics "github.com/hashicorp/go-metrics"
)

// The in-memory dump (SetupConfig.Inmem) keeps the last InmemRetain of
// metrics in buckets of InmemInterval and writes the completed buckets on a
// signal, in go-metrics' InmemSignal format.
//
// A catalog counter or timer, which a worker records several times per
// task, aggregates into its own entry (memWindow): a lock and a few
// additions, no allocation. Everything else (gauges, which are set once per
// backlog publish, and names outside the catalog) goes to go-metrics'
// InmemSink, which flattens the key into a new string and looks it up in a
// map per call: about 1.2 µs and 18 allocations of a task's metrics before
// (docs/decisions.md, "The in-memory dump aggregates per series").

// memWindow is one catalog series entry's part of the dump: a ring of the
// aggregates of its last intervals, made at its first value.
type memWindow struct {
	mu      sync.Mutex
	buckets []memBucket
}

// memBucket is one interval of a memWindow.
type memBucket struct {
	start int64 // the interval's start, Unix nanoseconds; 0: never used
	agg   gometrics.AggregateSample
}

// inmemConfig is how the Registry buckets its own series.
type inmemConfig struct {
	interval  int64   // nanoseconds
	intervals int     // buckets kept, the current one included
	rateDenom float64 // the interval in seconds, for AggregateSample.Rate
}

func newInmemConfig(interval, retain time.Duration) inmemConfig {
	return inmemConfig{
		interval:  int64(interval),
		intervals: max(int(retain/interval), 1),
		rateDenom: interval.Seconds(),
	}
}

// start is the start of the interval holding t.
func (c inmemConfig) start(t time.Time) int64 {
	ns := t.UnixNano()
	return ns - ns%c.interval
}

// add ingests v, recorded at now, into the bucket of its interval: what
// AggregateSample.Ingest does, with the Registry's clock rather than a
// second reading of the wall clock.
func (w *memWindow) add(c inmemConfig, now time.Time, v float32) {
	start := c.start(now)
	f := float64(v)
	w.mu.Lock()
	if w.buckets == nil {
		w.buckets = make([]memBucket, c.intervals)
	}
	b := &w.buckets[int((start/c.interval)%int64(len(w.buckets)))]
	if b.start != start {
		*b = memBucket{start: start}
	}
	a := &b.agg
	a.Count++
	a.Sum += f
	a.SumSq += f * f
	if f < a.Min || a.Count == 1 {
		a.Min = f
	}
	if f > a.Max || a.Count == 1 {
		a.Max = f
	}
	a.Rate = a.Sum / c.rateDenom
	a.LastUpdated = now
	w.mu.Unlock()
}

// completed returns copies of the buckets that started at or after from
// and before until.
func (w *memWindow) completed(from, until int64) []memBucket {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []memBucket
	for _, b := range w.buckets {
		if b.start != 0 && b.start >= from && b.start < until {
			out = append(out, b)
		}
	}
	return out
}

// dumpLine is one line of the dump, for sorting.
type dumpLine struct {
	start int64
	kind  byte // 'G', 'P', 'C' or 'S'
	name  string
	text  string // after "[time][kind] 'name': "
}

// writeDump writes the completed intervals of the last InmemRetain to w:
// per interval, oldest first, the gauges, points, counters and samples,
// each sorted by name. The interval still being filled is left out.
func (r *Registry) writeDump(w io.Writer) error {
	c := r.inmemCfg
	until := c.start(r.now())
	from := until - int64(c.intervals-1)*c.interval
	var lines []dumpLine
	for _, intv := range r.inmem.Data() {
		start := intv.Interval.UnixNano()
		if start < from || start >= until {
			continue
		}
		intv.RLock()
		lines = appendIntervalLines(lines, start, intv)
		intv.RUnlock()
	}
	for _, s := range r.own {
		kind := byte('C')
		switch s.def.Kind {
		case Gauge:
			continue // in the InmemSink
		case Histogram, Summary:
			kind = 'S'
		}
		s.each(func(e *entry) {
			name := strings.Join(e.side, ".")
			for _, b := range e.mem.completed(from, until) {
				lines = append(lines, dumpLine{start: b.start, kind: kind, name: name, text: b.agg.String()})
			}
		})
	}
	order := map[byte]int{'G': 0, 'P': 1, 'C': 2, 'S': 3}
	slices.SortStableFunc(lines, func(a, b dumpLine) int {
		switch {
		case a.start != b.start:
			return cmp.Compare(a.start, b.start)
		case a.kind != b.kind:
			return order[a.kind] - order[b.kind]
		}
		return strings.Compare(a.name, b.name)
	})
	var buf bytes.Buffer
	for _, l := range lines {
		fmt.Fprintf(&buf, "[%v][%c] '%s': %s\n", time.Unix(0, l.start), l.kind, l.name, l.text)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// appendIntervalLines adds the lines of one InmemSink interval, named as
// go-metrics' InmemSignal names them.
func appendIntervalLines(lines []dumpLine, start int64, intv *gometrics.IntervalMetrics) []dumpLine {
	for _, g := range intv.Gauges {
		lines = append(lines, dumpLine{start, 'G', dumpName(g.Name, g.Labels), fmt.Sprintf("%0.3f", g.Value)})
	}
	for _, g := range intv.PrecisionGauges {
		lines = append(lines, dumpLine{start, 'G', dumpName(g.Name, g.Labels), fmt.Sprintf("%0.3f", g.Value)})
	}
	for name, vals := range intv.Points {
		for _, v := range vals {
			lines = append(lines, dumpLine{start, 'P', name, fmt.Sprintf("%0.3f", v)})
		}
	}
	for _, a := range intv.Counters {
		lines = append(lines, dumpLine{start, 'C', dumpName(a.Name, a.Labels), a.AggregateSample.String()})
	}
	for _, a := range intv.Samples {
		lines = append(lines, dumpLine{start, 'S', dumpName(a.Name, a.Labels), a.AggregateSample.String()})
	}
	return lines
}

// dumpLabels is how InmemSignal folds label values into a name.
var dumpLabels = strings.NewReplacer(" ", "_", ":", "_")

func dumpName(name string, labels []gometrics.Label) string {
	for _, l := range labels {
		name += "." + dumpLabels.Replace(l.Value)
	}
	return name
}

// dumpOnSignal writes the dump to w on every sig until stop is closed.
func (r *Registry) dumpOnSignal(sig syscall.Signal, w io.Writer, stop <-chan struct{}) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sig)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ch:
				_ = r.writeDump(w) // nowhere to report a failed write to stderr
			case <-stop:
				return
			}
		}
	}()
}
