package tracing_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-dev/drover"
)

// A pooled Go child gets the task span's context in its task frame (issue
// 17), as a per-task child gets it in TRACEPARENT.
func TestPooledGoChildHandlerSeesTheTaskSpan(t *testing.T) {
	f := newFleet(t)
	if err := f.w.Start(queueConfig("gopool", drover.TaskRoute{Go: true, Pool: &drover.PoolConfig{}}), claim{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ids")
	args, _ := json.Marshal(out)
	ctx, ps := f.tp.Tracer("producer").Start(context.Background(), "produce")
	if _, err := f.store.Producer().Enqueue(ctx, &drover.Message{Queue: "gopool", Task: goSpanHandler, Args: args}); err != nil {
		t.Fatal(err)
	}
	ps.End()
	task := f.span(t, "process gopool")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the handler did not run: %v (span %v)", err, task.Attributes)
	}
	if want := ps.SpanContext().TraceID().String() + " " + task.SpanContext.SpanID().String(); string(b) != want {
		t.Fatalf("want the handler's context in trace and span %q, have %q", want, b)
	}
}
