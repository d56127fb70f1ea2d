package scaler

import (
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// The one rule both the scaler and `drover ctl status` count by (issue 32:
// ctl status kept a copy of it).
func TestFiguresAddAndAutoscale(t *testing.T) {
	for _, tc := range []struct {
		name     string
		backlogs []drover.Backlog
		target   int64
		want     Autoscale
	}{
		{"no queue", nil, 10, Autoscale{TargetLag: 10}},
		{"idle queues need no worker", []drover.Backlog{{}, {}}, 10, Autoscale{TargetLag: 10}},
		{"lag rounds up", []drover.Backlog{{Lag: 11}, {Lag: 5}}, 10, Autoscale{TargetLag: 10, Lag: 16, QueuesWithLag: 2, WorkersNeeded: 2}},
		{"at most one worker per queue with lag", []drover.Backlog{{Lag: 1000}, {}}, 10, Autoscale{TargetLag: 10, Lag: 1000, QueuesWithLag: 1, WorkersNeeded: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f Figures
			for _, b := range tc.backlogs {
				f.Add(b)
			}
			if f.Queues != len(tc.backlogs) {
				t.Fatalf("want %d queues counted, have %d", len(tc.backlogs), f.Queues)
			}
			if have := f.Autoscale(tc.target); have != tc.want {
				t.Fatalf("want %+v, have %+v", tc.want, have)
			}
		})
	}
	var f Figures
	f.Add(drover.Backlog{OldestAge: time.Minute})
	f.Add(drover.Backlog{OldestAge: time.Second})
	if f.OldestAge != time.Minute {
		t.Fatalf("want the largest age, 1m, have %s", f.OldestAge)
	}
}

// ctl status's answer over every queue, from lags alone, is Measure's rule.
func TestAutoscaleOfLags(t *testing.T) {
	got := AutoscaleOf([]int64{0, 3, 1, 0}, 1)
	want := Autoscale{TargetLag: 1, Lag: 4, QueuesWithLag: 2, WorkersNeeded: 2}
	if got != want {
		t.Fatalf("want %+v, have %+v", want, got)
	}
	if got := AutoscaleOf(nil, 5); got != (Autoscale{TargetLag: 5}) {
		t.Fatalf("no queue: want nothing needed, have %+v", got)
	}
}
