// Package metrics names Drover's metrics in one place (names.go, Catalog)
// and defines the small Recorder interface the runtime reports through.
// Setup builds a Registry: a Recorder backed by a github.com/hashicorp/go-metrics
// instance of its own (never the package-global one, so parallel tests do
// not see each other) over the Prometheus, statsd and in-memory sinks.
// docs/metrics.md documents every exported name.
package metrics

// Label is one metric label (queue, task, outcome, …).
type Label struct {
	Name, Value string
}

// Recorder receives measurements. Implementations are safe for concurrent
// use and never block for long: a slow sink drops data rather than stall a
// worker.
type Recorder interface {
	// IncrCounter adds v to a counter.
	IncrCounter(name string, v float32, labels ...Label)
	// SetGauge sets a gauge.
	SetGauge(name string, v float32, labels ...Label)
	// AddSample records one observation of a timer (milliseconds) or
	// summary.
	AddSample(name string, v float32, labels ...Label)
}

// Discard is a Recorder that records nothing; the default everywhere.
var Discard Recorder = discard{}

type discard struct{}

func (discard) IncrCounter(string, float32, ...Label) {}
func (discard) SetGauge(string, float32, ...Label)    {}
func (discard) AddSample(string, float32, ...Label)   {}

// L is shorthand for a Label.
func L(name, value string) Label { return Label{Name: name, Value: value} }
