package metrics

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/hashicorp/go-hclog"
	gometrics "github.com/hashicorp/go-metrics"
	promsink "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// promReplacer is what go-metrics' Prometheus sink does to a key joined
// with '_' (prometheus.flattenKey).
var promReplacer = strings.NewReplacer(" ", "_", ".", "_", "=", "_", "-", "_", "/", "_")

// promSink is the go-metrics side of Prometheus: a go-metrics Prometheus
// sink in the private prometheus.Registry that also holds the Registry's own
// collectors (collectors.go) for every catalog metric. So it sees only names
// outside the catalog (none in drover today), and keeps them for the life of
// the process.
type promSink struct {
	lasting  *promsink.PrometheusSink
	registry *prometheus.Registry
	help     map[string]string // Prometheus name → help text
}

func newPromSink() (*promSink, error) {
	reg := prometheus.NewRegistry()
	s := &promSink{registry: reg, help: map[string]string{}}
	for _, d := range catalog {
		for _, n := range PrometheusSeries(d) {
			s.help[n] = d.Help
		}
	}
	var err error
	s.lasting, err = promsink.NewPrometheusSinkFrom(promsink.PrometheusOpts{
		Name: "drover_metrics_sink_lasting", Registerer: reg,
	})
	if err != nil {
		return nil, fmt.Errorf("register prometheus sink: %w", err)
	}
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("register go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("register process collector: %w", err)
	}
	return s, nil
}

// handler serves the registry in the Prometheus text format, with the
// catalog's help text on drover_* families; sweep runs before each gather.
// A family that fails to gather (two kinds under one name) is left out and
// logged; the rest is served.
func (s *promSink) handler(log hclog.Logger, sweep func()) http.Handler {
	gather := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		sweep()
		mfs, err := s.registry.Gather()
		for _, mf := range mfs {
			if h, ok := s.help[mf.GetName()]; ok {
				mf.Help = &h
			}
		}
		return mfs, err
	})
	return promhttp.HandlerFor(gather, promhttp.HandlerOpts{
		ErrorLog:      log.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// The gometrics.MetricSink methods: all go to the lasting sink.

func (s *promSink) SetGauge(key []string, val float32) { s.SetGaugeWithLabels(key, val, nil) }
func (s *promSink) SetGaugeWithLabels(key []string, val float32, labels []gometrics.Label) {
	s.lasting.SetGaugeWithLabels(key, val, labels)
}
func (s *promSink) SetPrecisionGauge(key []string, val float64) {
	s.SetPrecisionGaugeWithLabels(key, val, nil)
}
func (s *promSink) SetPrecisionGaugeWithLabels(key []string, val float64, labels []gometrics.Label) {
	s.lasting.SetPrecisionGaugeWithLabels(key, val, labels)
}
func (s *promSink) EmitKey(key []string, val float32) {}
func (s *promSink) IncrCounter(key []string, val float32) {
	s.lasting.IncrCounterWithLabels(key, val, nil)
}
func (s *promSink) IncrCounterWithLabels(key []string, val float32, labels []gometrics.Label) {
	s.lasting.IncrCounterWithLabels(key, val, labels)
}
func (s *promSink) AddSample(key []string, val float32) {
	s.lasting.AddSampleWithLabels(key, val, nil)
}
func (s *promSink) AddSampleWithLabels(key []string, val float32, labels []gometrics.Label) {
	s.lasting.AddSampleWithLabels(key, val, labels)
}

var (
	_ gometrics.MetricSink               = (*promSink)(nil)
	_ gometrics.PrecisionGaugeMetricSink = (*promSink)(nil)
)
