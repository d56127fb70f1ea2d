package tracing_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/tracing"
)

// TestOffWritesNothing: a nil Tracer adds no header, even when the caller's
// context carries a span, and its spans are no-ops.
func TestOffWritesNothing(t *testing.T) {
	var off *tracing.Tracer
	tp := sdktrace.NewTracerProvider()
	ctx, s := tp.Tracer("t").Start(context.Background(), "caller")
	defer s.End()
	h := map[string]string{"k": "v"}
	if got := off.Inject(ctx, h); len(got) != 1 {
		t.Fatalf("want headers unchanged with tracing off, have %v", got)
	}
	ctx2, span := off.StartEnqueue(ctx, &drover.Message{Queue: "q", Task: "t"})
	span.End(nil)
	if ctx2 != ctx {
		t.Fatal("want the caller's context back with tracing off")
	}
	_, ts := off.StartTask(ctx, "q", &drover.Message{}, time.Now())
	ts.Attempt(0, "success", 0, "")
	ts.DeadLettered("x")
	ts.End()
	if env := tracing.Env(context.Background()); env != nil {
		t.Fatalf("want no TRACEPARENT without a span, have %v", env)
	}
}

// TestInjectCopiesAndExtractReads: Inject leaves the caller's map alone and
// the headers it writes extract back to the same span context, also through
// the environment carrier.
func TestInjectCopiesAndExtractReads(t *testing.T) {
	tr := tracing.New(sdktrace.NewTracerProvider())
	ctx, span := tr.StartEnqueue(context.Background(), &drover.Message{Queue: "q", Task: "t"})
	defer span.End(nil)
	in := map[string]string{"k": "v", "traceparent": "stale"}
	out := tr.Inject(ctx, in)
	if in["traceparent"] != "stale" || len(in) != 2 {
		t.Fatalf("want the caller's headers untouched, have %v", in)
	}
	want := trace.SpanContextFromContext(ctx)
	if got := trace.SpanContextFromContext(tracing.Extract(context.Background(), out)); got.TraceID() != want.TraceID() || got.SpanID() != want.SpanID() || out["k"] != "v" {
		t.Fatalf("want %v back from %v, have %v", want, out, got)
	}
	env := map[string]string{}
	for _, kv := range tracing.Env(ctx) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	got := trace.SpanContextFromContext(tracing.FromEnv(context.Background(), func(k string) string { return env[k] }))
	if got.TraceID() != want.TraceID() || got.SpanID() != want.SpanID() {
		t.Fatalf("want %v back from the environment %v, have %v", want, env, got)
	}
	if bad := tracing.FromEnv(context.Background(), func(string) string { return "garbage" }); trace.SpanContextFromContext(bad).IsValid() {
		t.Fatal("want a malformed TRACEPARENT ignored")
	}
}

// TestFireLinksToTheSchedule: a fired slot's span starts a new trace, links
// to the schedule's fixed span context, and parents the job's enqueue.
func TestFireLinksToTheSchedule(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	if a, b := tracing.ScheduleSpanContext("nightly"), tracing.ScheduleSpanContext("nightly"); !a.Equal(b) || !a.IsValid() {
		t.Fatalf("want one valid span context per schedule name, have %v and %v", a, b)
	}
	if tracing.ScheduleSpanContext("a").TraceID() == tracing.ScheduleSpanContext("b").TraceID() {
		t.Fatal("want different schedules to have different ids")
	}
	ctx, fire := tr.StartFire(context.Background(), "nightly", "reports", time.Unix(1700000000, 0))
	ectx, enq := tr.StartEnqueue(ctx, &drover.Message{Queue: "reports", Task: "t"})
	enq.End(nil)
	fire.End(nil)
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("want 2 spans, have %d", len(spans))
	}
	f := spans[1]
	if f.Name != "fire nightly" || len(f.Links) != 1 || !f.Links[0].SpanContext.Equal(tracing.ScheduleSpanContext("nightly")) {
		t.Fatalf("want the fire span linked to the schedule, have %s links %v", f.Name, f.Links)
	}
	if spans[0].Parent.SpanID() != f.SpanContext.SpanID() || trace.SpanContextFromContext(ectx).TraceID() != f.SpanContext.TraceID() {
		t.Fatal("want the enqueue a child of the fire span")
	}
}
