package executor

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// The lazy context answers as context.WithDeadline's would: its deadline
// (or the parent's earlier one) without being made; done at a deadline
// that has passed, with DeadlineExceeded as its error and cause; cancelled
// with the parent, with the parent's cause; cancelled by its release,
// whether it was made before or not, and a context derived from it with it.
func TestLazyDeadlineAnswersAsWithDeadline(t *testing.T) {
	t.Parallel()
	future := time.Now().Add(time.Hour)

	t.Run("deadline without the real context", func(t *testing.T) {
		c := newLazyDeadline(context.Background(), future)
		defer c.release()
		if d, ok := c.Deadline(); !ok || !d.Equal(future) {
			t.Fatalf("want %v, have %v %v", future, d, ok)
		}
		if c.made.Load() {
			t.Fatal("Deadline made the real context")
		}
		earlier := future.Add(-time.Minute)
		parent, cancel := context.WithDeadline(context.Background(), earlier)
		defer cancel()
		c2 := newLazyDeadline(parent, future)
		defer c2.release()
		if d, _ := c2.Deadline(); !d.Equal(earlier) {
			t.Fatalf("a parent's earlier deadline: want %v, have %v", earlier, d)
		}
	})

	t.Run("past deadline", func(t *testing.T) {
		c := newLazyDeadline(context.Background(), time.Now().Add(-time.Millisecond))
		defer c.release()
		<-c.Done()
		if !errors.Is(c.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(c), context.DeadlineExceeded) {
			t.Fatalf("want DeadlineExceeded, have %v (cause %v)", c.Err(), context.Cause(c))
		}
	})

	t.Run("parent cancelled", func(t *testing.T) {
		parent, cancel := context.WithCancelCause(context.Background())
		c := newLazyDeadline(parent, future)
		defer c.release()
		if c.Err() != nil {
			t.Fatalf("live parent: want no error, have %v", c.Err())
		}
		lost := errors.New("session lost")
		cancel(lost)
		<-c.Done()
		if !errors.Is(c.Err(), context.Canceled) || !errors.Is(context.Cause(c), lost) {
			t.Fatalf("want Canceled by %v, have %v (cause %v)", lost, c.Err(), context.Cause(c))
		}
	})

	t.Run("released before use", func(t *testing.T) {
		c := newLazyDeadline(context.Background(), future)
		c.release()
		<-c.Done() // a goroutine the handler left behind looks now
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("want Canceled, have %v", c.Err())
		}
	})

	t.Run("released after use, derived context", func(t *testing.T) {
		c := newLazyDeadline(context.Background(), future)
		derived, cancel := context.WithCancel(c)
		defer cancel()
		if derived.Err() != nil || !c.made.Load() {
			t.Fatalf("want a live derived context and the real one made, have %v, made %v", derived.Err(), c.made.Load())
		}
		c.release()
		<-derived.Done()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("want Canceled, have %v", c.Err())
		}
	})

	t.Run("value", func(t *testing.T) {
		type key struct{}
		parent := context.WithValue(context.Background(), key{}, "v")
		c := newLazyDeadline(parent, future)
		defer c.release()
		if v, _ := c.Value(key{}).(string); v != "v" {
			t.Fatalf("want the parent's value, have %q", v)
		}
	})
}

// An inline handler that never looks at its context costs no timer and no
// child of the task's context: at most maxInlineAllocs allocations a task
// with a deadline and a cancellable task context, as the worker runs it
// (context.WithTimeout made it 4).
func TestInlineTaskWithADeadlineAllocatesNoTimer(t *testing.T) {
	e := newTestExecutor(t, Config{})
	task := testTask(t, handlerNoop, inlineRoute) // a minute's timeout
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var res Result
	allocs := testing.AllocsPerRun(200, func() { res = e.Execute(ctx, task) })
	if res.Outcome != OutcomeSuccess {
		t.Fatalf("want success, have %s (%s)", res.Outcome, res.Reason)
	}
	if allocs > maxInlineAllocs {
		t.Fatalf("an inline task: want at most %d allocations, have %.1f", maxInlineAllocs, allocs)
	}
}

// maxInlineAllocs is TestInlineTaskWithADeadlineAllocatesNoTimer's bound:
// the lazy context.
const maxInlineAllocs = 1

// A pooled Go child's task with a deadline whose handler never looks at
// its context makes no timer either: the handler's context is the lazy
// one, still unmade when the child has answered (context.WithDeadline
// made a timer and 7 allocations a task).
func TestPooledGoTaskWithADeadlineMakesNoTimer(t *testing.T) {
	env, err := json.Marshal(&drover.Message{ID: "m1", Task: handlerKeepContext, Args: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	f := taskFrame{Type: frameTask, Seq: 1, Envelope: env, Deadline: time.Now().Add(time.Hour).Format(time.RFC3339Nano)}
	s := &goPoolServer{}
	if r := s.serve(&f); r.Outcome != wireSuccess {
		t.Fatalf("want success, have %+v", r)
	}
	c, ok := keptContext.Load().(*lazyDeadline)
	if !ok {
		t.Fatalf("want the lazy context, have %T", keptContext.Load())
	}
	if c.made.Load() {
		t.Fatal("the handler's context was made, with its timer: want it left unmade")
	}
	// Released with the task: a look now finds it over.
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("after the task: want Canceled, have %v", c.Err())
	}
}

// handlerKeepContext keeps its context in keptContext and returns.
const handlerKeepContext = "worker-test-keep-context"

var keptContext atomic.Value

func init() {
	drover.Register(handlerKeepContext, func(ctx context.Context, _ *drover.Message) error {
		keptContext.Store(ctx)
		return nil
	})
}
