// Package testkit holds the helpers that tests of several packages share:
// a logger that writes to the test's log, a bounded context, a poll until a
// condition holds, a fake clock, and the count of a package's exported
// methods that holds the 15-methods rule. It has no servers (see testenv).
package testkit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Bound is how long Eventually and Context wait at most. It only keeps a
// broken test from hanging; it asserts no speed.
const Bound = 90 * time.Second

// Logger returns a logger writing to t.Log at level.
func Logger(t testing.TB, level hclog.Level) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: level, Output: NewWriter(t)})
}

// Writer sends what is written to t.Log. Made by NewWriter, it drops the
// lines written once the test's cleanup ran: a goroutine that outlives its
// test (a watch that fires as the servers stop) may still log, and t.Log
// after the test's end races with the test's completion, which the race
// detector reports as a failure. A Writer made by hand drops only the
// lines t.Log refuses.
type Writer struct {
	T    testing.TB
	gate *writeGate
}

// writeGate closes a Writer at the test's cleanup.
type writeGate struct {
	mu     sync.Mutex
	closed bool
}

// NewWriter returns a Writer to t.Log that stops at t's cleanup.
func NewWriter(t testing.TB) Writer {
	g := &writeGate{}
	t.Cleanup(func() {
		g.mu.Lock()
		g.closed = true
		g.mu.Unlock()
	})
	return Writer{T: t, gate: g}
}

func (w Writer) Write(b []byte) (int, error) {
	if w.gate != nil {
		w.gate.mu.Lock()
		defer w.gate.mu.Unlock()
		if w.gate.closed {
			return len(b), nil
		}
	}
	defer func() { recover() }() // logging after the test ended panics
	w.T.Log(string(b))
	return len(b), nil
}

// Context returns a context that ends with the test, or after Bound.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Bound)
	t.Cleanup(cancel)
	return ctx
}

// Eventually polls cond until it holds, and fails the test when it has
// not held within Bound. It waits for an event; it is no timing assertion.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
