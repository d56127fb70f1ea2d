package tracing_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/tracing"
	"github.com/drover-dev/drover/worker"
	"github.com/drover-dev/drover/worker/executor"
)

// TestMain makes the test binary usable as a "go" route's child.
func TestMain(m *testing.M) {
	executor.RunChildIfRequested()
	os.Exit(testenv.Run(m))
}

// goSpanHandler runs in a re-executed child: it writes the trace and span
// ids of its context to the file named by the message's args.
const goSpanHandler = "tracing-test.go-span"

func init() {
	drover.Register(goSpanHandler, func(ctx context.Context, m *drover.Message) error {
		var path string
		if err := json.Unmarshal(m.Args, &path); err != nil {
			return err
		}
		sc := trace.SpanContextFromContext(ctx)
		return os.WriteFile(path, []byte(sc.TraceID().String()+" "+sc.SpanID().String()), 0o644)
	})
}

// claim is a Claim nobody else contests.
type claim struct{}

func (claim) Offset() drover.Offset                        { return drover.Offset{} }
func (claim) Commit(context.Context, drover.Offset) error  { return nil }
func (claim) Release(context.Context, drover.Offset) error { return nil }
func (claim) Done() <-chan struct{}                        { return nil }
func (claim) Err() error                                   { return nil }

// fleet is a real Redis store and a worker, both traced into exp.
type fleet struct {
	exp   *tracetest.InMemoryExporter
	tp    *sdktrace.TracerProvider
	store *queue.Store
	w     *worker.Worker
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tr := tracing.New(tp)
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	store, err := queue.New(queue.Config{Client: rdb, Prefix: testenv.Prefix(t), Tracer: tr})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(worker.Config{
		Member: "m1", Store: store.Log(), Executor: ex,
		Tracer: tr, PollInterval: 20 * time.Millisecond, CommitInterval: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.AbortAll)
	return &fleet{exp: exp, tp: tp, store: store, w: w}
}

// produce enqueues one message under a producer span and returns the span.
func (f *fleet) produce(t *testing.T, q string) trace.SpanContext {
	t.Helper()
	ctx, ps := f.tp.Tracer("producer").Start(context.Background(), "produce")
	defer ps.End()
	if _, err := f.store.Producer().Enqueue(ctx, &drover.Message{Queue: q, Task: "t"}); err != nil {
		t.Fatal(err)
	}
	return ps.SpanContext()
}

// span waits until a span named name has ended and returns it.
func (f *fleet) span(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var found tracetest.SpanStub
	waitFor(t, "span "+name, func() bool {
		for _, s := range f.exp.GetSpans() {
			if s.Name == name {
				found = s
				return true
			}
		}
		return false
	})
	return found
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func queueConfig(name string, route drover.TaskRoute) drover.QueueConfig {
	return drover.QueueConfig{Name: name, Concurrency: 1, MaxAttempts: 1,
		Backoff: drover.Backoff{Base: drover.Duration(time.Millisecond), Max: drover.Duration(time.Millisecond)},
		Tasks:   map[string]drover.TaskRoute{"*": route}}
}

// TestSubprocessGetsTheProducersTrace: a task's process receives a
// TRACEPARENT whose trace id is the producer's, and the producer, enqueue
// and task spans and the child's parent form one chain in one trace.
func TestSubprocessGetsTheProducersTrace(t *testing.T) {
	f := newFleet(t)
	out := filepath.Join(t.TempDir(), "traceparent")
	if err := f.w.Start(queueConfig("traced", drover.TaskRoute{Command: []string{"/bin/sh", "-c", `printf %s "$TRACEPARENT" > ` + out}}), claim{}); err != nil {
		t.Fatal(err)
	}
	producer := f.produce(t, "traced")
	task := f.span(t, "process traced")
	enq := f.span(t, "enqueue traced")

	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(b), "-")
	if len(parts) != 4 {
		t.Fatalf("want TRACEPARENT version-trace-parent-flags, have %q", b)
	}
	if parts[1] != producer.TraceID().String() {
		t.Fatalf("want the child's trace id %s (the producer's), have %s", producer.TraceID(), parts[1])
	}
	if parts[2] != task.SpanContext.SpanID().String() {
		t.Fatalf("want the child's parent span to be the task span %s, have %s", task.SpanContext.SpanID(), parts[2])
	}
	if enq.Parent.SpanID() != producer.SpanID() || enq.SpanContext.TraceID() != producer.TraceID() {
		t.Fatalf("want the enqueue span a child of the producer's, have parent %s trace %s", enq.Parent.SpanID(), enq.SpanContext.TraceID())
	}
	if task.Parent.SpanID() != enq.SpanContext.SpanID() || task.SpanContext.TraceID() != producer.TraceID() {
		t.Fatalf("want the task span a child of the enqueue span, have parent %s trace %s", task.Parent.SpanID(), task.SpanContext.TraceID())
	}
	if task.SpanKind != trace.SpanKindConsumer || attr(task, tracing.AttrOutcome) != "success" || attr(task, tracing.AttrExitCode) != "0" {
		t.Fatalf("want a consumer span with outcome success and exit code 0, have %v %v", task.SpanKind, task.Attributes)
	}
}

// TestInlineHandlerSeesTheTaskSpanAndDeadLettersAreRecorded: an inline
// handler's context carries the task span (the producer's trace), and a
// failure that dead-letters the message shows on the span.
func TestInlineHandlerSeesTheTaskSpanAndDeadLettersAreRecorded(t *testing.T) {
	var mu sync.Mutex
	var seen trace.SpanContext
	drover.Register("tracing-test.fail", func(ctx context.Context, _ *drover.Message) error {
		mu.Lock()
		seen = trace.SpanContextFromContext(ctx)
		mu.Unlock()
		return errors.New("boom")
	})
	f := newFleet(t)
	if err := f.w.Start(queueConfig("inl", drover.TaskRoute{Inline: true}), claim{}); err != nil {
		t.Fatal(err)
	}
	ctx, ps := f.tp.Tracer("producer").Start(context.Background(), "produce")
	if _, err := f.store.Producer().Enqueue(ctx, &drover.Message{Queue: "inl", Task: "tracing-test.fail"}); err != nil {
		t.Fatal(err)
	}
	ps.End()
	task := f.span(t, "process inl")
	mu.Lock()
	defer mu.Unlock()
	if seen.TraceID() != ps.SpanContext().TraceID() || seen.SpanID() != task.SpanContext.SpanID() {
		t.Fatalf("want the handler's context to carry the task span %s in trace %s, have %s in %s",
			task.SpanContext.SpanID(), ps.SpanContext().TraceID(), seen.SpanID(), seen.TraceID())
	}
	var events []string
	for _, e := range task.Events {
		events = append(events, e.Name)
	}
	if fmt.Sprint(events) != "[attempt dead_letter]" || attr(task, tracing.AttrOutcome) != "failure" {
		t.Fatalf("want events [attempt dead_letter] and outcome failure, have %v %v", events, task.Attributes)
	}
}

// attr returns the value of the span's attribute k as text, "" when unset.
func attr(s tracetest.SpanStub, k attribute.Key) string {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value.Emit()
		}
	}
	return ""
}

// TestGoChildHandlerSeesTheTaskSpan: a Go handler in a re-executed child
// gets the task span's context (through TRACEPARENT) in its ctx.
func TestGoChildHandlerSeesTheTaskSpan(t *testing.T) {
	f := newFleet(t)
	if err := f.w.Start(queueConfig("gochild", drover.TaskRoute{Go: true}), claim{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ids")
	args, _ := json.Marshal(out)
	ctx, ps := f.tp.Tracer("producer").Start(context.Background(), "produce")
	if _, err := f.store.Producer().Enqueue(ctx, &drover.Message{Queue: "gochild", Task: goSpanHandler, Args: args}); err != nil {
		t.Fatal(err)
	}
	ps.End()
	task := f.span(t, "process gochild")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the handler did not run: %v (span %v)", err, task.Attributes)
	}
	if want := ps.SpanContext().TraceID().String() + " " + task.SpanContext.SpanID().String(); string(b) != want {
		t.Fatalf("want the handler's context in trace and span %q, have %q", want, b)
	}
}
