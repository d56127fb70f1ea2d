package metrics

import (
	"fmt"
	"net/http"
	"strings"
	"time"

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

// promSink is the go-metrics side of Prometheus: two go-metrics Prometheus
// sinks in one private prometheus.Registry, which also holds the Registry's
// own collectors (collectors.go) for the catalog's counters and timers. So
// the sinks see gauges, and names outside the catalog. Gauges marked Expires
// in the catalog go to the expiring sink, which forgets a series not set
// within the retention; everything else goes to the lasting sink, which
// never forgets (a gauge set only on change — scheduler_leader — would
// disappear).
type promSink struct {
	lasting, expiring *promsink.PrometheusSink
	expires           map[string]bool // Prometheus names of expiring gauges
	registry          *prometheus.Registry
	help              map[string]string // Prometheus name → help text
}

func newPromSink(retention time.Duration) (*promSink, error) {
	reg := prometheus.NewRegistry()
	s := &promSink{registry: reg, expires: map[string]bool{}, help: map[string]string{}}
	for _, d := range catalog {
		for _, n := range PrometheusSeries(d) {
			s.help[n] = d.Help
		}
		if d.Expires {
			s.expires[PrometheusName(d.Name)] = true
		}
	}
	var err error
	s.lasting, err = promsink.NewPrometheusSinkFrom(promsink.PrometheusOpts{
		Name: "drover_metrics_sink_lasting", Registerer: reg,
	})
	if err != nil {
		return nil, fmt.Errorf("register prometheus sink: %w", err)
	}
	s.expiring, err = promsink.NewPrometheusSinkFrom(promsink.PrometheusOpts{
		Name: "drover_metrics_sink_expiring", Registerer: reg, Expiration: retention,
	})
	if err != nil {
		return nil, fmt.Errorf("register prometheus sink for expiring gauges: %w", err)
	}
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("register go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("register process collector: %w", err)
	}
	return s, nil
}

// gaugeSink returns the sink a gauge with this key goes to.
func (s *promSink) gaugeSink(key []string) *promsink.PrometheusSink {
	if s.expires[promReplacer.Replace(strings.Join(key, "_"))] {
		return s.expiring
	}
	return s.lasting
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

// The gometrics.MetricSink methods: gauges are routed, the rest goes to
// the lasting sink.

func (s *promSink) SetGauge(key []string, val float32) { s.SetGaugeWithLabels(key, val, nil) }
func (s *promSink) SetGaugeWithLabels(key []string, val float32, labels []gometrics.Label) {
	s.gaugeSink(key).SetGaugeWithLabels(key, val, labels)
}
func (s *promSink) SetPrecisionGauge(key []string, val float64) {
	s.SetPrecisionGaugeWithLabels(key, val, nil)
}
func (s *promSink) SetPrecisionGaugeWithLabels(key []string, val float64, labels []gometrics.Label) {
	s.gaugeSink(key).SetPrecisionGaugeWithLabels(key, val, labels)
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
