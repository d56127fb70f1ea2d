package metrics

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// maxLabels is the most labels a catalog metric has, and the most a call
// may pass and still take the fast path: the labels of a call are a
// fixed-size array, so that finding its entry allocates nothing.
const maxLabels = 4

// callKey is the label names and values of a call, as given.
type callKey [2 * maxLabels]string

// entry is what one combination of labels records into.
type entry struct {
	prom   any      // prometheus.Counter, Gauge or Observer; nil without Prometheus
	values []string // the labels' values in the order of Def.Labels
	side   []string // the statsd and in-memory key, labels folded in
	used   atomic.Int64
	setAt  atomic.Int64 // an expiring gauge's last set, Unix nanoseconds
	mem    memWindow    // a counter's or timer's part of the in-memory dump
}

// series is the recording side of one catalog metric: with Prometheus on, the client_golang vector that holds it, and
// an entry per combination of labels seen. Recording into a known entry
// costs a map lookup under a read lock and an atomic add; go-metrics'
// Prometheus sink instead flattened and hashed the key and built the label
// pairs on every call, and its statsd and in-memory sinks formatted the
// labels into the key every time.
type series struct {
	def     Def
	key     []string // go-metrics key: drover, name
	mu      sync.RWMutex
	entries map[callKey]*entry
	make    func(lvs ...string) any  // the vector's child; nil without Prometheus
	del     func(lvs ...string) bool // deletes a child of the vector
	epoch   *atomic.Int64            // the Registry's sweep count
	grouped bool                     // exports a "group" label for the call's "queue"
}

// newSeries builds the series of d; reg is nil without Prometheus.
func newSeries(d Def, reg prometheus.Registerer, epoch *atomic.Int64) (*series, error) {
	if len(d.Labels) > maxLabels {
		return nil, fmt.Errorf("metric %s has %d labels, more than %d", d.Name, len(d.Labels), maxLabels)
	}
	s := &series{def: d, key: []string{Namespace, d.Name}, entries: map[callKey]*entry{}, epoch: epoch,
		grouped: slices.Contains(d.Labels, "group") && !d.Aggregate}
	if reg == nil {
		return s, nil
	}
	name := PrometheusName(d.Name)
	var c prometheus.Collector
	switch d.Kind {
	case Gauge:
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: d.Help}, d.Labels)
		c, s.make, s.del = v, func(lvs ...string) any { return v.WithLabelValues(lvs...) }, v.DeleteLabelValues
	case Counter:
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: d.Help}, d.Labels)
		c, s.make, s.del = v, func(lvs ...string) any { return v.WithLabelValues(lvs...) }, v.DeleteLabelValues
	case Histogram:
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: d.Help, Buckets: MillisecondBuckets}, d.Labels)
		c, s.make, s.del = v, func(lvs ...string) any { return v.WithLabelValues(lvs...) }, v.DeleteLabelValues
	case Summary:
		// What go-metrics' Prometheus sink made, so quantile queries keep
		// their meaning: the last 10 s, these error bounds.
		v := prometheus.NewSummaryVec(prometheus.SummaryOpts{
			Name: name, Help: d.Help, MaxAge: 10 * time.Second,
			Objectives: map[float64]float64{0.5: 0.05, 0.9: 0.01, 0.99: 0.001},
		}, d.Labels)
		c, s.make, s.del = v, func(lvs ...string) any { return v.WithLabelValues(lvs...) }, v.DeleteLabelValues
	default:
		return nil, fmt.Errorf("metric %s: kind %s has no own collector", d.Name, d.Kind)
	}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("register %s: %w", name, err)
	}
	if d.Kind == Counter && len(d.Labels) == 0 {
		// The one series exists from the start: an unlabelled counter is
		// exported at 0, so increase() sees its first event.
		s.entry(nil)
	}
	return s, nil
}

// entry returns the entry of labels, made on first use and marked used in
// the current sweep epoch; nil when a call passes more than maxLabels
// labels.
func (s *series) entry(labels []Label) *entry {
	e := s.lookup(labels)
	if e != nil {
		if ep := s.epoch.Load(); e.used.Load() != ep {
			e.used.Store(ep)
		}
	}
	return e
}

func (s *series) lookup(labels []Label) *entry {
	if len(labels) > maxLabels {
		return nil
	}
	var k callKey
	for i, l := range labels {
		k[2*i], k[2*i+1] = l.Name, l.Value
	}
	s.mu.RLock()
	e, ok := s.entries[k]
	s.mu.RUnlock()
	if ok {
		return e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[k]; ok {
		return e
	}
	e = &entry{values: s.values(labels), side: []string{sideKey(s.def.Name, labels)}}
	if s.make != nil {
		e.prom = s.make(e.values...)
	}
	s.entries[k] = e
	return e
}

// each calls f with every entry, under the series' read lock.
func (s *series) each(f func(*entry)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.entries {
		f(e)
	}
}

// expire forgets the labelled counter and timer entries not used in the
// epochs before ep-1.
func (s *series) expire(ep int64) {
	if len(s.def.Labels) == 0 || s.def.Kind == Gauge {
		return // one series for the process, or a gauge: see expireGauges
	}
	s.forget(func(e *entry) bool { return e.used.Load() <= ep-2 })
}

// expireGauges forgets the entries of an expiring gauge last set before
// (Unix nanoseconds), labelled or not.
func (s *series) expireGauges(before int64) {
	if s.def.Kind == Gauge && s.def.Expires {
		s.forget(func(e *entry) bool { return e.setAt.Load() < before })
	}
}

// forget deletes the entries old reports, and their Prometheus children
// unless another entry (the same labels given in another order) still
// records into them. A call that found an entry just before it went
// records into a forgotten child: one value of an idle series, lost.
func (s *series) forget(old func(*entry) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []*entry
	for k, e := range s.entries {
		if old(e) {
			delete(s.entries, k)
			gone = append(gone, e)
		}
	}
	if len(gone) == 0 || s.del == nil {
		return
	}
	live := make(map[any]bool, len(s.entries))
	for _, e := range s.entries {
		live[e.prom] = true
	}
	for _, e := range gone {
		if !live[e.prom] {
			s.del(e.values...)
		}
	}
}

// values orders labels as Def.Labels. Prometheus exports exactly the
// catalog's labels: a label the catalog does not list is left out, a
// missing one is empty.
func (s *series) values(labels []Label) []string {
	lv := make([]string, len(s.def.Labels))
	for _, l := range labels {
		for i, n := range s.def.Labels {
			if n == l.Name {
				lv[i] = l.Value
				break
			}
		}
	}
	return lv
}

// sideReplacer is what the statsd sink and the in-memory dump do to a label
// value.
var sideReplacer = strings.NewReplacer(" ", "_", ":", "_")

// sideKey is the one-part key the statsd and in-memory sinks get for name
// with labels, "drover.<name>.<value>…": what they printed when given the
// key and the labels apart, formatted once per entry instead of per call.
func sideKey(name string, labels []Label) string {
	var b strings.Builder
	b.WriteString(Namespace + "." + name)
	for _, l := range labels {
		b.WriteByte('.')
		b.WriteString(sideReplacer.Replace(l.Value))
	}
	return b.String()
}
