package metrics

import (
	"sync"

	gometrics "github.com/hashicorp/go-metrics"
)

// statsdSink guards a go-metrics StatsdSink against use after Shutdown:
// the StatsdSink closes its queue channel there, and a later send would
// panic. After shutdown every call is dropped.
type statsdSink struct {
	mu     sync.RWMutex
	closed bool
	s      *gometrics.StatsdSink
}

// shutdown stops the sink's sender goroutine. Packets still buffered (at
// most ~100ms worth) are not sent: go-metrics does not flush on shutdown.
func (g *statsdSink) shutdown() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		g.s.Shutdown()
	}
}

// with runs f on the sink unless it is shut down.
func (g *statsdSink) with(f func(s *gometrics.StatsdSink)) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.closed {
		f(g.s)
	}
}

func (g *statsdSink) SetGauge(key []string, val float32) {
	g.with(func(s *gometrics.StatsdSink) { s.SetGauge(key, val) })
}
func (g *statsdSink) SetGaugeWithLabels(key []string, val float32, labels []gometrics.Label) {
	g.with(func(s *gometrics.StatsdSink) { s.SetGaugeWithLabels(key, val, labels) })
}
func (g *statsdSink) SetPrecisionGauge(key []string, val float64) {
	g.with(func(s *gometrics.StatsdSink) { s.SetPrecisionGauge(key, val) })
}
func (g *statsdSink) SetPrecisionGaugeWithLabels(key []string, val float64, labels []gometrics.Label) {
	g.with(func(s *gometrics.StatsdSink) { s.SetPrecisionGaugeWithLabels(key, val, labels) })
}
func (g *statsdSink) EmitKey(key []string, val float32) {
	g.with(func(s *gometrics.StatsdSink) { s.EmitKey(key, val) })
}
func (g *statsdSink) IncrCounter(key []string, val float32) {
	g.with(func(s *gometrics.StatsdSink) { s.IncrCounter(key, val) })
}
func (g *statsdSink) IncrCounterWithLabels(key []string, val float32, labels []gometrics.Label) {
	g.with(func(s *gometrics.StatsdSink) { s.IncrCounterWithLabels(key, val, labels) })
}
func (g *statsdSink) AddSample(key []string, val float32) {
	g.with(func(s *gometrics.StatsdSink) { s.AddSample(key, val) })
}
func (g *statsdSink) AddSampleWithLabels(key []string, val float32, labels []gometrics.Label) {
	g.with(func(s *gometrics.StatsdSink) { s.AddSampleWithLabels(key, val, labels) })
}

var (
	_ gometrics.MetricSink               = (*statsdSink)(nil)
	_ gometrics.PrecisionGaugeMetricSink = (*statsdSink)(nil)
)
