package metrics

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of DetailConfig fields left zero.
const (
	DefaultTopOldest      = 10
	DefaultTopLagging     = 10
	DefaultOldestAgeAbove = 5 * time.Minute
	DefaultLagAbove       = 10_000
	DefaultMaxDetail      = 100
)

// DetailConfig chooses the queues whose backlog gauges (drover_lag,
// drover_oldest_age_seconds, drover_delayed, drover_dead) a worker exports
// with a queue label at a scrape: the TopOldest queues whose oldest message
// waited longest, the TopLagging queues with the most lag, and then every
// queue at or over OldestAgeAbove or LagAbove, oldest first, until Max
// queues are chosen. Every other queue is only in its group's aggregates
// (drover_group_*). Zero fields take the defaults.
type DetailConfig struct {
	TopOldest      int           // default DefaultTopOldest
	TopLagging     int           // default DefaultTopLagging
	OldestAgeAbove time.Duration // default DefaultOldestAgeAbove
	LagAbove       int64         // default DefaultLagAbove
	Max            int           // at least TopOldest + TopLagging; default DefaultMaxDetail
}

// withDefaults validates c and fills in its defaults.
func (c DetailConfig) withDefaults() (DetailConfig, error) {
	if c.TopOldest < 0 || c.TopLagging < 0 || c.OldestAgeAbove < 0 || c.LagAbove < 0 || c.Max < 0 {
		return c, fmt.Errorf("metrics setup: detail: fields must not be negative (top oldest %d, top lagging %d, oldest age above %s, lag above %d, max %d)",
			c.TopOldest, c.TopLagging, c.OldestAgeAbove, c.LagAbove, c.Max)
	}
	if c.TopOldest == 0 {
		c.TopOldest = DefaultTopOldest
	}
	if c.TopLagging == 0 {
		c.TopLagging = DefaultTopLagging
	}
	if c.OldestAgeAbove == 0 {
		c.OldestAgeAbove = DefaultOldestAgeAbove
	}
	if c.LagAbove == 0 {
		c.LagAbove = DefaultLagAbove
	}
	if c.Max == 0 {
		c.Max = max(DefaultMaxDetail, c.TopOldest+c.TopLagging)
	}
	if c.Max < c.TopOldest+c.TopLagging {
		return c, fmt.Errorf("metrics setup: detail: max %d is less than top oldest %d + top lagging %d", c.Max, c.TopOldest, c.TopLagging)
	}
	return c, nil
}

// The per-queue backlog gauges, in the order of queueBacklog.v.
var backlogNames = [...]string{Lag, OldestAge, Delayed, Dead}

const (
	bLag = iota
	bOldest
	bDelayed
	bDead
)

// backlogBoard keeps the latest backlog gauges of every queue a worker
// published (forgotten GaugeRetention after their last set, as the gauges
// were) and exports, at each scrape, the chosen queues' gauges and every
// group's aggregates: a scrape's size is bounded by DetailConfig and the
// groups, whatever the number of queues.
type backlogBoard struct {
	groups    *groups
	rules     DetailConfig
	retention time.Duration
	now       func() time.Time
	detail    [len(backlogNames)]*prometheus.Desc // label queue
	agg       map[string]*prometheus.Desc         // aggregate name → desc, label group

	mu     sync.Mutex
	queues map[string]*queueBacklog
}

type queueBacklog struct {
	name  string
	group string
	v     [len(backlogNames)]float64
	setAt time.Time
}

func newBacklogBoard(g *groups, rules DetailConfig, retention time.Duration, now func() time.Time) *backlogBoard {
	b := &backlogBoard{groups: g, rules: rules, retention: retention, now: now,
		agg: map[string]*prometheus.Desc{}, queues: map[string]*queueBacklog{}}
	for _, d := range catalog {
		switch {
		case d.Detail:
			for i, n := range backlogNames {
				if n == d.Name {
					b.detail[i] = prometheus.NewDesc(PrometheusName(d.Name), d.Help, []string{"queue"}, nil)
				}
			}
		case d.Aggregate:
			b.agg[d.Name] = prometheus.NewDesc(PrometheusName(d.Name), d.Help, []string{"group"}, nil)
		}
	}
	return b
}

var _ prometheus.Collector = (*backlogBoard)(nil)

// set records one backlog gauge of queue; name is one of backlogNames.
func (b *backlogBoard) set(name, queue string, v float32) {
	i := slices.Index(backlogNames[:], name)
	if i < 0 {
		return
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[queue]
	if q == nil {
		q = &queueBacklog{name: queue, group: b.groups.group(queue)}
		b.queues[queue] = q
	}
	q.v[i] = float64(v)
	q.setAt = now
}

// Describe sends nothing: the board is an unchecked collector (its series
// come and go with the queues chosen).
func (b *backlogBoard) Describe(chan<- *prometheus.Desc) {}

// Collect forgets the queues not set within the retention and sends the
// chosen queues' gauges and the groups' aggregates.
func (b *backlogBoard) Collect(ch chan<- prometheus.Metric) {
	detail, groups := b.snapshot()
	for _, q := range detail {
		for i, d := range b.detail {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, q.v[i], q.name)
		}
	}
	for name, g := range groups {
		ch <- prometheus.MustNewConstMetric(b.agg[GroupLag], prometheus.GaugeValue, g.v[bLag], name)
		ch <- prometheus.MustNewConstMetric(b.agg[GroupOldestAge], prometheus.GaugeValue, g.v[bOldest], name)
		ch <- prometheus.MustNewConstMetric(b.agg[GroupDelayed], prometheus.GaugeValue, g.v[bDelayed], name)
		ch <- prometheus.MustNewConstMetric(b.agg[GroupDead], prometheus.GaugeValue, g.v[bDead], name)
		ch <- prometheus.MustNewConstMetric(b.agg[GroupQueuesWithLag], prometheus.GaugeValue, g.withLag, name)
	}
}

type groupBacklog struct {
	v       [len(backlogNames)]float64 // sums, but the oldest age: the largest
	withLag float64
}

// snapshot forgets expired queues and returns copies of the chosen queues
// and the aggregates by group.
func (b *backlogBoard) snapshot() ([]queueBacklog, map[string]*groupBacklog) {
	before := b.now().Add(-b.retention)
	b.mu.Lock()
	defer b.mu.Unlock()
	groups := map[string]*groupBacklog{}
	var backlog []*queueBacklog // queues with something waiting
	for name, q := range b.queues {
		if q.setAt.Before(before) {
			delete(b.queues, name)
			continue
		}
		g := groups[q.group]
		if g == nil {
			g = &groupBacklog{}
			groups[q.group] = g
		}
		g.v[bLag] += q.v[bLag]
		g.v[bOldest] = max(g.v[bOldest], q.v[bOldest])
		g.v[bDelayed] += q.v[bDelayed]
		g.v[bDead] += q.v[bDead]
		if q.v[bLag] > 0 {
			g.withLag++
		}
		if q.v[bLag] > 0 || q.v[bOldest] > 0 {
			backlog = append(backlog, q)
		}
	}
	chosen := b.rules.choose(backlog)
	out := make([]queueBacklog, len(chosen))
	for i, q := range chosen {
		out[i] = *q
	}
	return out, groups
}

// choose returns the queues of backlog whose gauges are exported, at most
// c.Max: the TopOldest oldest, the TopLagging most lagging, then those over
// a threshold, oldest first. Ties go by name, so that a scrape's choice is
// stable.
func (c DetailConfig) choose(backlog []*queueBacklog) []*queueBacklog {
	byAge := func(a, b *queueBacklog) int {
		return cmp.Or(cmp.Compare(b.v[bOldest], a.v[bOldest]), cmp.Compare(b.v[bLag], a.v[bLag]), cmp.Compare(a.name, b.name))
	}
	byLag := func(a, b *queueBacklog) int {
		return cmp.Or(cmp.Compare(b.v[bLag], a.v[bLag]), cmp.Compare(b.v[bOldest], a.v[bOldest]), cmp.Compare(a.name, b.name))
	}
	if len(backlog) <= c.TopOldest+c.TopLagging {
		return backlog
	}
	picked := make(map[*queueBacklog]bool, c.Max)
	var out []*queueBacklog
	take := func(qs []*queueBacklog) {
		for _, q := range qs {
			if !picked[q] && len(out) < c.Max {
				picked[q] = true
				out = append(out, q)
			}
		}
	}
	take(top(backlog, c.TopLagging, byLag, nil))
	take(top(backlog, c.TopOldest, byAge, nil))
	ageAbove, lagAbove := c.OldestAgeAbove.Seconds(), float64(c.LagAbove)
	take(top(backlog, c.Max, byAge, func(q *queueBacklog) bool {
		return !picked[q] && (q.v[bOldest] >= ageAbove || q.v[bLag] >= lagAbove)
	}))
	return out
}

// top returns the k first of the items that keep accepts (all when nil),
// in the order of cmp, without sorting them all: a scrape with 25,000
// queues spent most of its time sorting them.
func top(items []*queueBacklog, k int, cmp func(a, b *queueBacklog) int, keep func(*queueBacklog) bool) []*queueBacklog {
	out := make([]*queueBacklog, 0, k+1)
	for _, q := range items {
		if k == 0 || (len(out) == k && cmp(q, out[k-1]) >= 0) || (keep != nil && !keep(q)) {
			continue
		}
		i, _ := slices.BinarySearchFunc(out, q, cmp)
		out = slices.Insert(out, i, q)
		if len(out) > k {
			out = out[:k]
		}
	}
	return out
}
