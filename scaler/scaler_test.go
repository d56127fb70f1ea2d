package scaler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		md   map[string]string
		want string // selection; "" means an error
		lag  int64
	}{
		{"names", map[string]string{KeyQueues: "b, a,a"}, "a,b", DefaultTargetLag},
		{"prefix and glob", map[string]string{KeyPrefix: "mail-", KeyGlob: "rep?rt", KeyTargetLag: "7"}, "mail-*,rep?rt", 7},
		{"keda's own keys are ignored", map[string]string{KeyQueues: "a", "scalerAddress": "x:1", "caCert": "pem"}, "a", DefaultTargetLag},
		{"unknown key", map[string]string{KeyQueues: "a", "queue": "a"}, "", 0},
		{"empty", map[string]string{}, "", 0},
		{"negative activation", map[string]string{KeyQueues: "a", KeyActivationLag: "-1"}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := ParseSpec(tc.md)
			if tc.want == "" {
				if !errors.Is(err, ErrBadMetadata) {
					t.Fatalf("want ErrBadMetadata, have %v", err)
				}
				return
			}
			if err != nil || sp.Selection.String() != tc.want || sp.TargetLag != tc.lag {
				t.Fatalf("want selection %q lag %d, have %q %d, %v", tc.want, tc.lag, sp.Selection, sp.TargetLag, err)
			}
		})
	}
}

func TestClampNeverAsksForMoreWorkersThanQueuesWithLag(t *testing.T) {
	for _, tc := range []struct {
		fig          Figures
		target       int64
		metric, need int64
	}{
		{Figures{QueuesWithLag: 1, Lag: 1000}, 10, 10, 1},
		{Figures{QueuesWithLag: 3, Lag: 25}, 10, 25, 3},
		{Figures{QueuesWithLag: 3, Lag: 21}, 10, 21, 3},
		{Figures{QueuesWithLag: 3, Lag: 20}, 10, 20, 2},
		{Figures{QueuesWithLag: 0, Lag: 0}, 10, 0, 0},
	} {
		if m, n := tc.fig.LagMetric(tc.target), tc.fig.WorkersNeeded(tc.target); m != tc.metric || n != tc.need {
			t.Errorf("%+v target %d: want metric %d workers %d, have %d %d", tc.fig, tc.target, tc.metric, tc.need, m, n)
		}
	}
	f := Figures{QueuesWithLag: 2, OldestAge: time.Hour}
	if v := f.AgeMetric(time.Minute); v != 120 {
		t.Errorf("want the age clamped to 2 × 60 s, have %v", v)
	}
}

func TestMatchesMetric(t *testing.T) {
	for have, want := range map[string]bool{
		MetricLag: true, "s0-" + MetricLag: true, "s12-" + MetricLag: true,
		"s-" + MetricLag: false, "x0-" + MetricLag: false, MetricLag + "x": false, "s0" + MetricLag: false,
	} {
		if matchesMetric(have, MetricLag) != want {
			t.Errorf("matchesMetric(%q): want %v", have, want)
		}
	}
}

type fakeFleet map[string]drover.Backlog

func (f fakeFleet) Queues(context.Context) ([]string, error) {
	var out []string
	for q := range f {
		out = append(out, q)
	}
	return out, nil
}

func (f fakeFleet) Backlogs(_ context.Context, qs []string) ([]drover.Backlog, error) {
	out := make([]drover.Backlog, len(qs))
	for i, q := range qs {
		out[i] = f[q]
	}
	return out, nil
}

func TestMeasureSumsTheSelection(t *testing.T) {
	f := fakeFleet{"a-1": {Lag: 3, OldestAge: time.Second}, "a-2": {}, "a-3": {Lag: 4, OldestAge: 3 * time.Second}, "b": {Lag: 100}}
	sel, _ := NewSelection("a-*")
	fig, err := Measure(context.Background(), f, sel)
	if err != nil || fig != (Figures{Queues: 3, QueuesWithLag: 2, Lag: 7, OldestAge: 3 * time.Second}) {
		t.Fatalf("want 3 queues, 2 with lag, lag 7, age 3s; have %+v, %v", fig, err)
	}
	none, _ := NewSelection("c*")
	if _, err := Measure(context.Background(), f, none); !errors.Is(err, ErrNoQueues) {
		t.Fatalf("want ErrNoQueues, have %v", err)
	}
}

// A selection naming a queue that does not exist is refused, naming it,
// even when its other names match: a misspelt name must not silently
// measure as nothing.
func TestMeasureRefusesAnUnknownQueueName(t *testing.T) {
	f := fakeFleet{"emails": {Lag: 3}, "b": {}}
	sel, _ := NewSelection("emails", "nosuch")
	if _, err := Measure(context.Background(), f, sel); !errors.Is(err, ErrUnknownQueue) || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("selection emails,nosuch: want ErrUnknownQueue naming nosuch, have %v", err)
	}
	ok, _ := NewSelection("emails", "b*")
	if fig, err := Measure(context.Background(), f, ok); err != nil || fig.Lag != 3 || fig.Queues != 2 {
		t.Fatalf("selection emails,b*: want 2 queues, lag 3, have %+v %v", fig, err)
	}
}

// A prefix or glob that matches no queue is refused, naming it, even
// beside patterns that match (issue 41: a misspelt prefix next to a good
// one was measured as nothing, silently), as a lone one is.
func TestMeasureRefusesAPatternThatMatchesNothing(t *testing.T) {
	f := fakeFleet{"emails-1": {Lag: 3}, "emails-2": {Lag: 1}, "b": {}}
	sp, err := ParseSpec(map[string]string{KeyPrefix: "emails-,emials-"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Measure(context.Background(), f, sp.Selection)
	if want := "scaler: the selection matches no queue: emials-* (selection emails-*,emials-*: check for a misspelt prefix or glob)"; !errors.Is(err, ErrNoQueues) || err.Error() != want {
		t.Fatalf("prefixes emails-,emials-: want ErrNoQueues %q, have %v", want, err)
	}
}

// batchFleet counts the Backlogs calls and the most queues in one.
type batchFleet struct {
	fakeFleet
	calls, most int
}

func (f *batchFleet) Backlogs(ctx context.Context, qs []string) ([]drover.Backlog, error) {
	f.calls++
	f.most = max(f.most, len(qs))
	return f.fakeFleet.Backlogs(ctx, qs)
}

// Measure reads a large selection in batches of MeasureBatch, and sums
// every queue of it, the last partial batch included.
func TestMeasureReadsTheSelectionInBatches(t *testing.T) {
	const n = 2*MeasureBatch + 500
	f := &batchFleet{fakeFleet: fakeFleet{}}
	for i := range n {
		f.fakeFleet[fmt.Sprintf("c-%05d", i)] = drover.Backlog{Lag: 1, OldestAge: time.Duration(i) * time.Millisecond}
	}
	sel, _ := NewSelection("c-*")
	fig, err := Measure(context.Background(), f, sel)
	if err != nil {
		t.Fatal(err)
	}
	want := Figures{Queues: n, QueuesWithLag: n, Lag: n, OldestAge: (n - 1) * time.Millisecond}
	if fig != want || f.calls != 3 || f.most != MeasureBatch {
		t.Fatalf("want %+v in 3 calls of at most %d; have %+v in %d calls of at most %d", want, MeasureBatch, fig, f.calls, f.most)
	}
}
