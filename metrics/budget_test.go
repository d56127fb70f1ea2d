package metrics_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/metrics"
)

// workQueues records what a worker records for n queues that each ran a
// task: the task's counter and two histograms, a commit, and the backlog
// gauges (queue i has lag 10·i: from queue 1,000 on it is over the default
// LagAbove).
func workQueues(r *metrics.Registry, n int) {
	for i := range n {
		q := metrics.L("queue", fmt.Sprintf("tenant-%d:q%05d", i%7, i))
		r.IncrCounter(metrics.TasksTotal, 1, q, metrics.L("task", "send"), metrics.L("outcome", "success"))
		r.AddSample(metrics.TaskDuration, 12, q, metrics.L("task", "send"))
		r.AddSample(metrics.QueueLatency, 3, q)
		r.IncrCounter(metrics.CommitsTotal, 1, q)
		r.SetGauge(metrics.Lag, float32(10*i), q)
		r.SetGauge(metrics.OldestAge, float32(i%300), q)
		r.SetGauge(metrics.Delayed, 1, q)
		r.SetGauge(metrics.Dead, 0, q)
	}
}

// droverSeries counts the drover_* samples of a scrape.
func droverSeries(s scrape) int {
	n := 0
	for k := range s.samples {
		if strings.HasPrefix(k, "drover_") {
			n++
		}
	}
	return n
}

// TestSeriesDoNotGrowWithTheQueues is the metrics budget: with 2,000 and
// with 8,000 queues that had work, /metrics holds the same number of drover
// series — the group aggregates and the per-queue detail of at most
// Detail.Max queues. Before the budget it grew by ~45 series per queue.
func TestSeriesDoNotGrowWithTheQueues(t *testing.T) {
	count := func(n int) (int, scrape) {
		r, err := metrics.Setup(metrics.SetupConfig{Prometheus: true})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		workQueues(r, n)
		s := scrapeRegistry(t, r)
		return droverSeries(s), s
	}
	small, _ := count(2000)
	large, s := count(8000)
	if large != small {
		t.Errorf("drover series: want the same with 8000 queues as with 2000 (%d), have %d", small, large)
	}
	// 7 groups × (tasks, commits, 2 histograms of 20 series, 5 backlog
	// aggregates) + 4 gauges × 100 detail queues + the unlabelled series.
	if limit := 7*(1+1+20+20+5) + 4*metrics.DefaultMaxDetail + 20; large > limit {
		t.Errorf("drover series: want at most %d, have %d", limit, large)
	}
	detail := 0
	for k := range s.samples {
		if strings.HasPrefix(k, "drover_lag{") {
			detail++
		}
	}
	if detail != metrics.DefaultMaxDetail {
		t.Errorf("drover_lag series: want the %d detail queues, have %d", metrics.DefaultMaxDetail, detail)
	}
	// The aggregates hold every queue: group tenant-0 has queues 0, 7, 14, …
	var lag0 float64
	for i := 0; i < 8000; i += 7 {
		lag0 += float64(10 * i)
	}
	s.want(t, `drover_group_lag{group="tenant-0"}`, fmt.Sprint(lag0))
	s.want(t, `drover_group_queues_with_lag{group="tenant-0"}`, "1142") // all but queue 0
	s.want(t, `drover_tasks_total{group="tenant-0",outcome="success",task="send"}`, "1143")
}

// TestDetailChoosesTheOldestTheMostLaggingAndThoseOverAThreshold checks the
// rule of DetailConfig on a handful of queues.
func TestDetailChoosesTheOldestTheMostLaggingAndThoseOverAThreshold(t *testing.T) {
	r, err := metrics.Setup(metrics.SetupConfig{Prometheus: true, Detail: metrics.DetailConfig{
		TopOldest: 1, TopLagging: 1, OldestAgeAbove: time.Minute, LagAbove: 500, Max: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	set := func(q string, lag, age float32) {
		r.SetGauge(metrics.Lag, lag, metrics.L("queue", q))
		r.SetGauge(metrics.OldestAge, age, metrics.L("queue", q))
	}
	set("oldest", 1, 900)   // top oldest
	set("biggest", 9000, 1) // top lagging
	set("over-age", 1, 120) // over the age threshold
	set("over-lag", 600, 2) // over the lag threshold, but Max is reached
	set("quiet", 3, 5)      // under every threshold
	set("idle", 0, 0)       // nothing waits
	s := scrapeRegistry(t, r)
	for q, want := range map[string]bool{"oldest": true, "biggest": true, "over-age": true, "over-lag": false, "quiet": false, "idle": false} {
		_, have := s.samples[`drover_lag{queue="`+q+`"}`]
		if have != want {
			t.Errorf("queue %s in the detail: want %v, have %v", q, want, have)
		}
	}
	s.want(t, `drover_group_oldest_age_seconds{group="oldest"}`, "900")
}

func TestGroupsArePatternsThenTheNamePrefixThenOther(t *testing.T) {
	r, err := metrics.Setup(metrics.SetupConfig{Prometheus: true, Groups: []string{"cust-*"}, MaxGroups: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, q := range []string{"cust-1", "cust-2", "emails:a", "emails:b", "reports", "later"} {
		r.IncrCounter(metrics.CommitsTotal, 1, metrics.L("queue", q))
	}
	s := scrapeRegistry(t, r)
	s.want(t, `drover_commits_total{group="cust-*"}`, "2")
	s.want(t, `drover_commits_total{group="emails"}`, "2")
	s.want(t, `drover_commits_total{group="_other"}`, "2") // MaxGroups 3: cust-*, emails, _other
}

// The GroupOf hook (where queue families plug in) answers for the names no
// pattern matches; an empty answer falls back to the name's prefix.
func TestGroupOfHookComesAfterThePatterns(t *testing.T) {
	r, err := metrics.Setup(metrics.SetupConfig{Prometheus: true, Groups: []string{"vip-*"},
		GroupOf: func(q string) string {
			if strings.HasPrefix(q, "cust") {
				return "family-customers"
			}
			return ""
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, q := range []string{"vip-1", "cust1", "cust2", "emails:x"} {
		r.AddSample(metrics.QueueLatency, 5, metrics.L("queue", q))
	}
	s := scrapeRegistry(t, r)
	s.want(t, `drover_queue_latency_ms_count{group="vip-*"}`, "1")
	s.want(t, `drover_queue_latency_ms_count{group="family-customers"}`, "2")
	s.want(t, `drover_queue_latency_ms_count{group="emails"}`, "1")
}

func TestSetupRefusesABadBudget(t *testing.T) {
	for name, cfg := range map[string]metrics.SetupConfig{
		"bad pattern":        {Groups: []string{"a["}},
		"negative detail":    {Detail: metrics.DetailConfig{TopOldest: -1}},
		"max under the tops": {Detail: metrics.DetailConfig{TopOldest: 5, TopLagging: 5, Max: 9}},
		"too few groups":     {Groups: []string{"a*", "b*"}, MaxGroups: 2},
	} {
		if _, err := metrics.Setup(cfg); err == nil {
			t.Errorf("%s: want an error, have none", name)
		}
	}
}
