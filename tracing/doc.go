// Package tracing carries OpenTelemetry traces through Drover: from the
// producer's enqueue, in the envelope's headers, to the worker's span for
// the task, and into the task's process.
//
// It is the whole tracing surface of the other packages, kept small so that
// the queue, the worker loop, the executor and the scheduler each call it in
// a line or two:
//
//   - queue: StartEnqueue around an enqueue; Inject writes the W3C trace
//     context ("traceparent", "tracestate") into the envelope's headers.
//   - worker: StartTask opens the span of one delivery of a message, a child
//     of the producer's context extracted from its headers; the TaskSpan
//     records each attempt's outcome and exit code, a retry and a dead
//     letter.
//   - executor: Env returns TRACEPARENT and TRACESTATE for a child's
//     environment (the OpenTelemetry environment-variable carrier);
//     FromEnv puts them back into a Go handler's context in a re-executed
//     child. Inline handlers get the task span's context directly.
//   - scheduler: StartFire opens a fired slot's span, linked to the
//     schedule's own span context (a trace id derived from the schedule's
//     name), so every job a schedule fired can be found from the schedule.
//
// A nil *Tracer is tracing switched off: every method returns at once,
// allocates nothing and writes no header. cmd/drover builds the Tracer from
// drover.hcl's tracing block (an OTLP exporter); a Go program that enqueues
// passes its own TracerProvider to New. docs/redis-schema.md documents the
// headers for producers in other languages.
package tracing
