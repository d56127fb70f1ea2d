package scheduler_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/scheduler/schedulertest"
	"github.com/drover-dev/drover/tracing"
)

// TestFiredJobIsLinkedToItsSchedule: with a Tracer, each fired slot is
// enqueued inside a "fire" span linked to the schedule's span context, so
// the job's trace leads back to the schedule.
func TestFiredJobIsLinkedToItsSchedule(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	st := schedulertest.NewMemStore()
	clock := newClock(t0)
	q := newQueue()
	var enqueuedIn trace.SpanContext
	q.check = func(ctx context.Context, _ *drover.Message) error {
		enqueuedIn = trace.SpanContextFromContext(ctx)
		return nil
	}
	s, err := scheduler.New(scheduler.Config{Store: st, Enqueuer: q, Leadership: scheduler.SoleLeader{}, Clock: clock,
		Tracer: tracing.New(tp)})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, scheduler.NewManager(st), scheduler.Definition{Name: "nightly", Queue: "reports", Task: "build",
		Schedule: scheduler.Spec{Type: scheduler.TypeInterval, Every: time.Minute}})
	tick(t, s, clock, t0)                    // plans 10:00:00
	tick(t, s, clock, t0.Add(2*time.Second)) // fires it
	if q.count() != 1 {
		t.Fatalf("want one fire, have %v", q.ids())
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "fire nightly" {
		t.Fatalf("want one span \"fire nightly\", have %v", spans)
	}
	f := spans[0]
	if len(f.Links) != 1 || !f.Links[0].SpanContext.Equal(tracing.ScheduleSpanContext("nightly")) {
		t.Fatalf("want a link to the schedule's span context, have %v", f.Links)
	}
	if enqueuedIn.SpanID() != f.SpanContext.SpanID() {
		t.Fatalf("want the job enqueued inside the fire span %s, have %s", f.SpanContext.SpanID(), enqueuedIn.SpanID())
	}
}
