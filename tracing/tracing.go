package tracing

import (
	"context"
	"crypto/sha256"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/drover-dev/drover"
)

// Header names in an envelope's headers (W3C Trace Context, lower case)
// and the environment variables of a task's process (the OpenTelemetry
// environment carrier, upper case).
const (
	HeaderTraceparent = "traceparent"
	HeaderTracestate  = "tracestate"
	EnvTraceparent    = "TRACEPARENT"
	EnvTracestate     = "TRACESTATE"
)

// scope is the instrumentation scope name of Drover's spans.
const scope = "github.com/drover-dev/drover"

// Attribute keys of Drover's spans (the messaging.* ones follow the
// OpenTelemetry messaging conventions).
const (
	AttrSystem      = attribute.Key("messaging.system")
	AttrDestination = attribute.Key("messaging.destination.name")
	AttrOperation   = attribute.Key("messaging.operation.type")
	AttrMessageID   = attribute.Key("messaging.message.id")
	AttrTask        = attribute.Key("drover.task")
	AttrAttempt     = attribute.Key("drover.attempt")
	AttrPosition    = attribute.Key("drover.position")
	AttrQueueWait   = attribute.Key("drover.queue_wait_ms")
	AttrOutcome     = attribute.Key("drover.outcome")
	AttrExitCode    = attribute.Key("drover.exit_code")
	AttrSchedule    = attribute.Key("drover.schedule")
	AttrSlot        = attribute.Key("drover.slot")
	AttrDeadReason  = attribute.Key("drover.dead_reason")
)

var propagator = propagation.TraceContext{}

// Tracer starts Drover's spans. A nil *Tracer is tracing switched off.
type Tracer struct {
	t trace.Tracer
}

// New returns a Tracer over tp; a nil tp returns nil (off).
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		return nil
	}
	return &Tracer{t: tp.Tracer(scope)}
}

// Span is a started span; a nil *Span does nothing.
type Span struct{ s trace.Span }

// End ends the span, recording err (if any) as its status.
func (s *Span) End(err error) {
	if s == nil {
		return
	}
	if err != nil {
		s.s.RecordError(err)
		s.s.SetStatus(codes.Error, err.Error())
	}
	s.s.End()
}

// StartEnqueue starts the producer span of an enqueue of m (nil m: no
// span); the returned ctx carries it, for Inject.
func (tr *Tracer) StartEnqueue(ctx context.Context, m *drover.Message) (context.Context, *Span) {
	if tr == nil || m == nil {
		return ctx, nil
	}
	queue, task := m.Queue, m.Task
	ctx, s := tr.t.Start(ctx, "enqueue "+queue, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(AttrSystem.String("drover"), AttrDestination.String(queue),
			AttrOperation.String("send"), AttrTask.String(task)))
	return ctx, &Span{s: s}
}

// Inject returns headers with the trace context of ctx's span added (a new
// map; headers is not modified). Without a tracer, or when ctx carries no
// valid span context, it returns headers as they are.
func (tr *Tracer) Inject(ctx context.Context, headers map[string]string) map[string]string {
	if tr == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return headers
	}
	out := make(map[string]string, len(headers)+2)
	for k, v := range headers {
		if k != HeaderTraceparent && k != HeaderTracestate {
			out[k] = v
		}
	}
	propagator.Inject(ctx, propagation.MapCarrier(out))
	return out
}

// Extract returns ctx with the remote span context carried in headers (as
// written by Inject or by a producer in another language); ctx unchanged
// when there is none or it is malformed.
func Extract(ctx context.Context, headers map[string]string) context.Context {
	if headers[HeaderTraceparent] == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier(headers))
}

// TaskSpan is the span of one delivery of a message to a worker: from the
// start of its first attempt here to its end (success, retry handed to the
// delayed set, dead letter, abort). A nil *TaskSpan does nothing. Its
// attributes are collected and set once, at End: the SDK copies a span's
// first attribute set as it is, while every later set pays for a
// de-duplication map.
type TaskSpan struct {
	s     trace.Span
	attrs []attribute.KeyValue
}

// StartTask starts the consumer span of message m read from queue, a child
// of the producer's trace context in m.Headers. started is when its attempt
// starts (for the queue wait: start minus the message's position, its
// enqueue or due time). The returned ctx carries the span: hand it to the
// executor.
func (tr *Tracer) StartTask(ctx context.Context, queue string, m *drover.Message, started time.Time) (context.Context, *TaskSpan) {
	if tr == nil {
		return ctx, nil
	}
	parent := Extract(ctx, m.Headers)
	wait := started.Sub(time.UnixMicro(int64(m.Position)))
	ctx, s := tr.t.Start(parent, "process "+queue, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(started))
	ts := &TaskSpan{s: s}
	if s.IsRecording() {
		ts.attrs = make([]attribute.KeyValue, 0, 12)
		ts.attrs = append(ts.attrs, AttrSystem.String("drover"), AttrDestination.String(queue),
			AttrOperation.String("process"), AttrMessageID.String(m.ID), AttrTask.String(m.Task),
			AttrAttempt.Int(m.Attempt), AttrPosition.Int64(int64(m.Position)),
			AttrQueueWait.Float64(float64(wait)/float64(time.Millisecond)))
	}
	return ctx, ts
}

// Attempt records one attempt's end: the span's outcome (the executor's:
// success, retry, failure, timeout, aborted) and exit code are the last
// attempt's, and an attempt that did not succeed is also an event with its
// number and reason, so in-place retries stay visible. The span's status
// becomes Error for any outcome but success.
func (ts *TaskSpan) Attempt(attempt int, outcome string, exitCode int, reason string) {
	if ts == nil || ts.attrs == nil {
		return
	}
	ts.set(AttrOutcome.String(outcome))
	ts.set(AttrExitCode.Int(exitCode))
	if outcome == "success" {
		ts.s.SetStatus(codes.Ok, "")
		return
	}
	ts.s.AddEvent("attempt", trace.WithAttributes(AttrAttempt.Int(attempt), AttrOutcome.String(outcome),
		AttrExitCode.Int(exitCode), attribute.String("drover.reason", reason)))
	ts.s.SetStatus(codes.Error, reason)
}

// set adds kv, replacing an earlier value of its key.
func (ts *TaskSpan) set(kv attribute.KeyValue) {
	for i := range ts.attrs {
		if ts.attrs[i].Key == kv.Key {
			ts.attrs[i] = kv
			return
		}
	}
	ts.attrs = append(ts.attrs, kv)
}

// DeadLettered records that the message was moved to the dead letters.
func (ts *TaskSpan) DeadLettered(reason string) {
	if ts == nil || ts.attrs == nil {
		return
	}
	ts.s.AddEvent("dead_letter", trace.WithAttributes(AttrDeadReason.String(reason)))
	ts.set(AttrDeadReason.String(reason))
	ts.s.SetStatus(codes.Error, "dead-lettered: "+reason)
}

// Retried records that the next attempt was handed to the delayed set.
func (ts *TaskSpan) Retried(due time.Time) {
	if ts == nil || ts.attrs == nil {
		return
	}
	ts.s.AddEvent("retry_scheduled", trace.WithAttributes(attribute.String("drover.retry_due", due.UTC().Format(time.RFC3339Nano))))
}

// End sets the collected attributes and ends the task span.
func (ts *TaskSpan) End() {
	if ts == nil {
		return
	}
	if ts.attrs != nil {
		ts.s.SetAttributes(ts.attrs...)
	}
	ts.s.End()
}

// Env returns TRACEPARENT and TRACESTATE for the span context of ctx, for a
// task's environment; nil when ctx carries none. It needs no Tracer: a ctx
// with a span exists only when tracing is on (or a caller put one there).
func Env(ctx context.Context) []string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	out := make([]string, 0, 2)
	if v := c[HeaderTraceparent]; v != "" {
		out = append(out, EnvTraceparent+"="+v)
	}
	if v := c[HeaderTracestate]; v != "" {
		out = append(out, EnvTracestate+"="+v)
	}
	return out
}

// FromEnv returns ctx with the remote span context of the TRACEPARENT and
// TRACESTATE variables looked up with getenv (os.Getenv in a task's
// process); ctx unchanged when TRACEPARENT is absent or malformed.
func FromEnv(ctx context.Context, getenv func(string) string) context.Context {
	tp := getenv(EnvTraceparent)
	if tp == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{HeaderTraceparent: tp, HeaderTracestate: getenv(EnvTracestate)})
}

// ScheduleSpanContext is the span context that stands for a schedule in
// links: its trace and span ids are derived from the schedule's name (the
// first 24 bytes of SHA-256("drover.schedule:" + name)), so the same
// schedule always has the same ids, in every process and language.
func ScheduleSpanContext(name string) trace.SpanContext {
	sum := sha256.Sum256([]byte("drover.schedule:" + name))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

// StartFire starts the span of a schedule's slot being fired; the enqueue
// that follows (with the returned ctx) is its child, and so is the task. The
// span links to ScheduleSpanContext(schedule).
func (tr *Tracer) StartFire(ctx context.Context, schedule, queue string, slot time.Time) (context.Context, *Span) {
	if tr == nil {
		return ctx, nil
	}
	ctx, s := tr.t.Start(ctx, "fire "+schedule, trace.WithSpanKind(trace.SpanKindProducer), trace.WithNewRoot(),
		trace.WithLinks(trace.Link{SpanContext: ScheduleSpanContext(schedule),
			Attributes: []attribute.KeyValue{AttrSchedule.String(schedule)}}),
		trace.WithAttributes(AttrSchedule.String(schedule), AttrDestination.String(queue),
			AttrSlot.String(strconv.FormatInt(slot.Unix(), 10))))
	return ctx, &Span{s: s}
}
