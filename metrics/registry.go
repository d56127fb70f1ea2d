package metrics

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	gometrics "github.com/hashicorp/go-metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults for SetupConfig fields left zero.
const (
	// DefaultGaugeRetention is how long an expiring gauge (per queue,
	// cluster) survives without a new value. Publishers set them at least
	// every DefaultGaugeRetention/4 or so.
	DefaultGaugeRetention = 2 * time.Minute
	// DefaultSeriesRetention is how long a labelled counter or timer (a
	// queue's tasks_total, task_duration_ms, …) survives without a new
	// value.
	DefaultSeriesRetention = time.Hour
	DefaultInmemInterval   = 10 * time.Second
	DefaultInmemRetain     = time.Minute
)

// SetupConfig chooses the sinks of a Registry. The zero value is a
// Registry that records nothing.
type SetupConfig struct {
	// Prometheus keeps metrics for scraping; Registry.Handler serves them.
	Prometheus bool
	// GaugeRetention is how long the Prometheus sink keeps a per-queue or
	// cluster gauge (Def.Expires) that is not set again, so that a queue's
	// former owner or a former rebalance leader stops exporting stale
	// values. Other gauges never expire; labelled counters and timers
	// follow SeriesRetention. Default DefaultGaugeRetention.
	GaugeRetention time.Duration
	// SeriesRetention is how long the Registry keeps a labelled counter,
	// summary or histogram series (a queue's, a task's) that records
	// nothing: a queue that went idle stops costing memory, in Prometheus
	// and in the Registry. Checked when /metrics is scraped; a series goes
	// between one and two retentions after its last value. When it comes
	// back it starts again at 0 (rate() reads that as a counter reset).
	// Unlabelled series never expire. Default DefaultSeriesRetention.
	SeriesRetention time.Duration
	// Now is the clock of the SeriesRetention sweep. Default time.Now.
	Now func() time.Time

	// Groups are the queue-name patterns (path.Match globs, "tenant-*")
	// whose queues share one "group" label value, the pattern itself. The
	// counters and timers given a queue (drover_tasks_total,
	// drover_task_duration_ms, …) and the backlog aggregates
	// (drover_group_*) are exported by group, never by queue, so that the
	// series of a process do not grow with its queues. A queue no pattern
	// matches is in the group GroupOf returns, else in the group named by
	// its name up to the first ':' ("emails:customer-42" → "emails").
	// Default: none.
	Groups []string
	// GroupOf is the hook for a queue's group when no pattern matches
	// (queue families, when they exist); "" falls back to the name's
	// prefix. It must be cheap and give a queue the same group every time.
	// Default: nil.
	GroupOf func(queue string) string
	// MaxGroups bounds the distinct groups a process exports; queues of
	// further groups are exported as OtherGroup. At least len(Groups)+1.
	// Default DefaultMaxGroups.
	MaxGroups int
	// Detail chooses the queues whose backlog gauges Prometheus gets with
	// a queue label (the most lagging and oldest, and those over a
	// threshold, up to a maximum). Zero fields take the defaults.
	Detail DetailConfig

	// Statsd is the host:port of a statsd server (UDP). Keys are
	// "drover.<name>" with the label values appended in order
	// ("drover.tasks_total.emails.send.success"). Default: none.
	Statsd string

	// Inmem keeps the last InmemRetain of metrics in memory, in buckets of
	// InmemInterval, and writes the completed buckets to DumpTo when the
	// process receives DumpSignal.
	Inmem bool
	// InmemInterval is the bucket width. Default 10s.
	InmemInterval time.Duration
	// InmemRetain is how much history is kept. Default 1m.
	InmemRetain time.Duration
	// DumpSignal triggers the dump. Default SIGUSR1.
	DumpSignal syscall.Signal
	// DumpTo receives the dump. Default os.Stderr.
	DumpTo io.Writer

	// Logger receives sink errors (statsd unreachable, a scrape that could
	// not gather a family). Default: a null logger.
	Logger hclog.Logger
}

// Registry is one process's metrics. It is a Recorder; its methods are
// safe for concurrent use.
//
// Every catalog metric is recorded by the Registry itself: into its own
// client_golang collectors for Prometheus (which it expires, see
// SetupConfig), and straight into the statsd and in-memory sinks with a key
// formatted once per label combination. Names outside the catalog go
// through a go-metrics instance (not the package-global one) over every
// configured sink.
//
// The metrics budget (docs/metrics.md): a call's "queue" label becomes the
// queue's "group" on counters and timers (SetupConfig.Groups), and a
// queue's backlog gauges are kept in a board that Prometheus reads at each
// scrape for the detail queues and the group aggregates
// (SetupConfig.Detail), so a scrape's series do not grow with the queues.
type Registry struct {
	gm  *gometrics.Metrics
	own map[string]*series // every catalog metric, by name
	// side is statsd and the InmemSink, for own gauges and for calls with
	// too many labels; nil without them. Own counters and timers go to
	// statsd (nil without it) and to their entry's memWindow.
	side   gometrics.MetricSink
	statsd gometrics.MetricSink
	// epoch counts sweeps (at most one per retention): an entry remembers
	// the epoch it was last used in, a sweep forgets those idle for two.
	epoch          atomic.Int64
	retention      time.Duration
	gaugeRetention time.Duration
	now            func() time.Time
	sweepMu        sync.Mutex
	lastSweep      time.Time
	prom           *promSink // nil without Prometheus
	groups         *groups
	board          *backlogBoard // the per-queue backlog gauges; nil without Prometheus
	handler        http.Handler
	inmem          *gometrics.InmemSink // nil without the in-memory dump
	inmemCfg       inmemConfig
	stopDump       chan struct{}
	statsdSink     *statsdSink
	close          sync.Once
}

var _ Recorder = (*Registry)(nil)

// Setup builds a Registry with the sinks cfg asks for. With Inmem it
// starts listening for cfg.DumpSignal; Close stops that.
func Setup(cfg SetupConfig) (*Registry, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.GaugeRetention < 0 || cfg.SeriesRetention < 0 || cfg.InmemInterval < 0 || cfg.InmemRetain < 0 {
		return nil, fmt.Errorf("metrics setup: durations must not be negative (gauge retention %s, series retention %s, inmem interval %s, inmem retain %s)",
			cfg.GaugeRetention, cfg.SeriesRetention, cfg.InmemInterval, cfg.InmemRetain)
	}
	if cfg.GaugeRetention == 0 {
		cfg.GaugeRetention = DefaultGaugeRetention
	}
	if cfg.SeriesRetention == 0 {
		cfg.SeriesRetention = DefaultSeriesRetention
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.InmemInterval == 0 {
		cfg.InmemInterval = DefaultInmemInterval
	}
	if cfg.InmemRetain == 0 {
		cfg.InmemRetain = DefaultInmemRetain
	}
	if cfg.InmemRetain < cfg.InmemInterval {
		return nil, fmt.Errorf("metrics setup: inmem retain %s is shorter than the interval %s", cfg.InmemRetain, cfg.InmemInterval)
	}
	if cfg.DumpSignal == 0 {
		cfg.DumpSignal = syscall.SIGUSR1
	}
	if cfg.DumpTo == nil {
		cfg.DumpTo = os.Stderr
	}

	detail, err := cfg.Detail.withDefaults()
	if err != nil {
		return nil, err
	}
	groups, err := newGroups(cfg.Groups, cfg.GroupOf, cfg.MaxGroups)
	if err != nil {
		return nil, err
	}
	r := &Registry{own: map[string]*series{}, retention: cfg.SeriesRetention,
		gaugeRetention: cfg.GaugeRetention, now: cfg.Now, lastSweep: cfg.Now(), groups: groups}
	var sinks, side gometrics.FanoutSink
	var reg *prometheus.Registry
	if cfg.Prometheus {
		p, err := newPromSink()
		if err != nil {
			return nil, fmt.Errorf("metrics setup: %w", err)
		}
		r.prom, r.handler, reg = p, p.handler(cfg.Logger.Named("metrics"), r.sweep), p.registry
		sinks = append(sinks, p)
		r.board = newBacklogBoard(groups, detail, cfg.GaugeRetention, cfg.Now)
		if err := reg.Register(r.board); err != nil {
			return nil, fmt.Errorf("metrics setup: register backlog gauges: %w", err)
		}
	}
	for _, d := range catalog {
		var rr prometheus.Registerer
		if reg != nil && !d.Detail && !d.Aggregate { // the board exports those
			rr = reg
		}
		s, err := newSeries(d, rr, &r.epoch)
		if err != nil {
			return nil, fmt.Errorf("metrics setup: %w", err)
		}
		r.own[d.Name] = s
	}
	if cfg.Statsd != "" {
		// The sink dials UDP in its own goroutine and retries; an
		// unreachable server costs dropped packets, not an error here.
		s, err := gometrics.NewStatsdSinkWithLogger(cfg.Statsd, cfg.Logger.Named("statsd"))
		if err != nil {
			return nil, fmt.Errorf("metrics setup: statsd sink for %s: %w", cfg.Statsd, err)
		}
		r.statsdSink = &statsdSink{s: s}
		r.statsd = r.statsdSink
		sinks, side = append(sinks, r.statsdSink), append(side, r.statsdSink)
	}
	if cfg.Inmem {
		r.inmem = gometrics.NewInmemSink(cfg.InmemInterval, cfg.InmemRetain)
		r.inmemCfg = newInmemConfig(cfg.InmemInterval, cfg.InmemRetain)
		sinks, side = append(sinks, r.inmem), append(side, r.inmem)
	}
	switch len(side) {
	case 0:
	case 1:
		r.side = side[0]
	default:
		r.side = side
	}
	var sink gometrics.MetricSink = &gometrics.BlackholeSink{}
	switch len(sinks) {
	case 0:
	case 1:
		sink = sinks[0]
	default:
		sink = sinks
	}
	gm, err := gometrics.New(&gometrics.Config{
		// No service name, host name or type prefix: keys are exactly
		// "drover" + name.
		TimerGranularity: time.Millisecond,
		FilterDefault:    true,
	}, sink)
	if err != nil {
		r.shutdown()
		return nil, fmt.Errorf("metrics setup: %w", err)
	}
	r.gm = gm
	if r.inmem != nil {
		r.stopDump = make(chan struct{})
		r.dumpOnSignal(cfg.DumpSignal, cfg.DumpTo, r.stopDump)
	}
	return r, nil
}

// IncrCounter adds v to counter name.
func (r *Registry) IncrCounter(name string, v float32, labels ...Label) {
	if s := r.own[name]; s != nil && s.def.Kind == Counter {
		r.record(s, v, labels, gometrics.MetricSink.IncrCounterWithLabels)
		return
	}
	r.gm.IncrCounterWithLabels(key(name), v, goLabels(labels))
}

// SetGauge sets gauge name.
func (r *Registry) SetGauge(name string, v float32, labels ...Label) {
	if s := r.own[name]; s != nil && s.def.Kind == Gauge {
		if s.def.Detail && r.board != nil && len(labels) == 1 && labels[0].Name == "queue" {
			// A queue's backlog gauge: kept by the board, which exports
			// the detail queues' and the groups' at each scrape. statsd
			// gets it as set (a packet, not a series per scrape); the
			// in-memory dump does not (a line per queue).
			r.board.set(name, labels[0].Value, v)
			if r.statsd != nil {
				r.statsd.SetGaugeWithLabels(s.key, v, goLabels(labels))
			}
			return
		}
		e := s.entry(labels)
		switch {
		case e == nil:
			r.sideOnly().SetGaugeWithLabels(s.key, v, goLabels(labels))
			return
		case e.prom != nil:
			e.prom.(prometheus.Gauge).Set(float64(v))
		}
		if s.def.Expires {
			e.setAt.Store(r.now().UnixNano())
		}
		if r.side != nil {
			r.side.SetGaugeWithLabels(e.side, v, nil)
		}
		return
	}
	r.gm.SetGaugeWithLabels(key(name), v, goLabels(labels))
}

// AddSample records one observation of a timer: summary or histogram
// name.
func (r *Registry) AddSample(name string, v float32, labels ...Label) {
	if s := r.own[name]; s != nil && s.def.Kind != Counter {
		r.record(s, v, labels, gometrics.MetricSink.AddSampleWithLabels)
		return
	}
	r.gm.AddSampleWithLabels(key(name), v, goLabels(labels))
}

// record is a counter's increment or a timer's sample on own series s:
// into Prometheus (a counter only when v ≥ 0: Prometheus counters only go
// up), then on to statsd and the in-memory dump by send, gometrics's method
// for the kind. Past the series' limit it goes to the side sinks only.
func (r *Registry) record(s *series, v float32, labels []Label, send func(gometrics.MetricSink, []string, float32, []gometrics.Label)) {
	var buf [maxLabels]Label
	e, labels := r.entryOf(s, labels, &buf)
	if e == nil {
		send(r.sideOnly(), s.key, v, goLabels(labels))
		return
	}
	switch {
	case e.prom == nil:
	case s.def.Kind == Counter:
		if v >= 0 {
			e.prom.(prometheus.Counter).Add(float64(v))
		}
	default:
		e.prom.(prometheus.Observer).Observe(float64(v))
	}
	r.toStatsdAndMemory(e, v, send)
}

// entryOf returns s's entry for labels, and the labels, rewritten into
// their groups when s is grouped (into buf, the caller's, so that nothing
// is allocated): the entry is nil past the series' limit.
func (r *Registry) entryOf(s *series, labels []Label, buf *[maxLabels]Label) (*entry, []Label) {
	if s.grouped {
		labels = r.groups.rewrite(labels, buf)
	}
	return s.entry(labels), labels
}

// toStatsdAndMemory passes a counter's increment or a sample of e on to
// statsd (by send: gometrics.MetricSink's method for the kind) and the
// in-memory dump, each when it is on.
func (r *Registry) toStatsdAndMemory(e *entry, v float32, send func(gometrics.MetricSink, []string, float32, []gometrics.Label)) {
	if r.statsd != nil {
		send(r.statsd, e.side, v, nil)
	}
	if r.inmem != nil {
		e.mem.add(r.inmemCfg, r.now(), v)
	}
}

// sweep forgets the expiring gauges not set within the gauge retention,
// and, unless the last epoch began less than a retention ago, starts a new
// epoch and forgets the counters and timers idle for the two before.
func (r *Registry) sweep() {
	r.sweepMu.Lock()
	defer r.sweepMu.Unlock()
	now := r.now()
	before := now.Add(-r.gaugeRetention).UnixNano()
	for _, s := range r.own {
		s.expireGauges(before)
	}
	if now.Sub(r.lastSweep) >= r.retention {
		r.lastSweep = now
		ep := r.epoch.Add(1)
		for _, s := range r.own {
			s.expire(ep)
		}
	}
}

// sideOnly is where a call to an own series with more labels than
// maxLabels goes: the statsd and in-memory sinks as usual, not Prometheus
// (whose vector has the catalog's labels).
func (r *Registry) sideOnly() gometrics.MetricSink {
	if r.side == nil {
		return &gometrics.BlackholeSink{}
	}
	return r.side
}

// Handler serves the Prometheus text format for the admin /metrics; nil
// when the Prometheus sink is off.
func (r *Registry) Handler() http.Handler { return r.handler }

// Close stops the dump signal handler and the statsd sender (packets of
// the last ~100ms may be lost). Recording after Close is harmless: statsd
// drops it, the other sinks still keep it. Close is idempotent.
func (r *Registry) Close() {
	r.close.Do(r.shutdown)
}

func (r *Registry) shutdown() {
	if r.stopDump != nil {
		close(r.stopDump)
	}
	if r.statsdSink != nil {
		r.statsdSink.shutdown()
	}
}

// key is the go-metrics key of a Recorder name.
func key(name string) []string { return []string{Namespace, name} }

func goLabels(labels []Label) []gometrics.Label {
	if len(labels) == 0 {
		return nil
	}
	out := make([]gometrics.Label, len(labels))
	for i, l := range labels {
		out[i] = gometrics.Label{Name: l.Name, Value: l.Value}
	}
	return out
}
