package worker

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// forwardingSource is a WakeupSource whose wake-ups the test sends, and a
// WakeupForwarder that notes what it is asked to pass on.
type forwardingSource struct {
	ch chan drover.Wakeup
	mu sync.Mutex
	on []string // the queues passed on, in order
}

func (s *forwardingSource) Wakeups(context.Context, string) (<-chan drover.Wakeup, error) {
	return s.ch, nil
}

func (s *forwardingSource) ForwardWakeups(_ context.Context, member string, queues ...string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.on = append(s.on, queues...)
	return len(queues), nil
}

// A wake-up of a queue this member does not run (a producer's route named
// the previous owner: queue.routeCache) is passed on to the owner; a
// wake-up of a queue it runs is not, and neither is one carrying a due
// time (only the general enqueue sends those, on the route it read).
func TestAWakeupOfAQueueNotRunHereIsPassedOn(t *testing.T) {
	w := newTestWorker(t, newMemLog(), &scriptedExecutor{}, nil)
	if err := w.Start(queueConfig("mine", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	src := &forwardingSource{ch: make(chan drover.Wakeup, 8)}
	src.ch <- drover.Wakeup{Queue: "moved"}
	src.ch <- drover.Wakeup{Queue: "mine"}
	src.ch <- drover.Wakeup{Queue: "later", Due: time.Now().Add(time.Hour)}
	src.ch <- drover.Wakeup{Queue: "moved-too", Entry: &drover.LogEntry{ID: "x", Position: 2}, Prev: 1}
	close(src.ch)
	w.FollowWakeups(context.Background(), src) // returns once everything was passed on
	if want := []string{"moved", "moved-too"}; !slices.Equal(src.on, want) {
		t.Fatalf("want %v passed on, have %v", want, src.on)
	}
	if n := w.State().Stages.Forwarded; n != 2 {
		t.Fatalf("want 2 forwarded in the stages, have %d", n)
	}
}
