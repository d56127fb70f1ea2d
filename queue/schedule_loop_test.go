package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover/scheduler"
)

// TestScheduleTwoLeadersFireEachSlotOnce runs two scheduler loops against
// the same Redis, both believing they lead (a split brain during failover),
// with the real queue store as enqueuer. 200 entries fire every second for
// 5 seconds of a shared fake clock. Every (entry, slot) must be enqueued
// exactly once and counted exactly once in the entry's meta.
func TestScheduleTwoLeadersFireEachSlotOnce(t *testing.T) {
	ctx := context.Background()
	env := newSchedEnv(t, schedStandalone(t))
	const entries, seconds = 200, 5
	m := scheduler.NewManager(env.sched)
	for i := 0; i < entries; i++ {
		if err := m.Add(ctx, scheduler.Definition{
			Name: fmt.Sprintf("e%03d", i), Queue: "loop", Task: "t", Catchup: scheduler.CatchupAll,
			Schedule: scheduler.Spec{Type: scheduler.TypeInterval, Every: time.Second},
		}); err != nil {
			t.Fatalf("add: %v", err)
		}
	}
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := newSetClock(start)
	enq := newEnqueuer(env.queue)
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		s := newLoop(t, env.sched, enq, clock, scheduler.Config{PollInterval: 2 * time.Millisecond})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Run(runCtx); err != nil {
				t.Errorf("run: %v", err)
			}
		}()
	}
	// Step the clock one second at a time, each time waiting until no entry
	// is due any more (both loops have fired and advanced everything).
	for sec := 0; sec <= seconds; sec++ {
		now := start.Add(time.Duration(sec) * time.Second)
		clock.Set(now)
		schedEventually(t, fmt.Sprintf("all entries advanced past %s", now.Format(time.TimeOnly)), func() bool {
			recs, err := env.sched.DueSchedules(ctx, now, 1)
			return err == nil && len(recs) == 0
		})
	}
	// The meta is recorded just after the advance: wait for the counts to
	// reach the number of slots, then check they did not overshoot.
	want := int64(seconds + 1)
	counts := func() map[string]int64 {
		list, err := m.List(ctx)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		out := map[string]int64{}
		for _, e := range list {
			out[e.Name] = e.Meta.TotalRunCount
		}
		return out
	}
	schedEventually(t, "every meta to count all slots", func() bool {
		for _, c := range counts() {
			if c < want {
				return false
			}
		}
		return true
	})
	stop()
	wg.Wait()

	accepted := enq.acceptedIDs()
	if len(accepted) != entries*(seconds+1) {
		t.Fatalf("want %d distinct (entry, slot) fires, have %d", entries*(seconds+1), len(accepted))
	}
	for i := 0; i < entries; i++ {
		name := fmt.Sprintf("e%03d", i)
		for sec := 0; sec <= seconds; sec++ {
			id := scheduler.SlotID(name, start.Add(time.Duration(sec)*time.Second))
			if accepted[id] != 1 {
				t.Fatalf("%s accepted %d times, want exactly once", id, accepted[id])
			}
		}
	}
	for name, c := range counts() {
		if c != want {
			t.Fatalf("%s: total_run_count %d, want %d (a slot counted twice)", name, c, want)
		}
	}
	msgs := readQueue(t, env.queue, "loop")
	seen := map[string]bool{}
	for _, msg := range msgs {
		if seen[msg.ID] {
			t.Fatalf("%s is twice in the queue", msg.ID)
		}
		seen[msg.ID] = true
	}
	if len(msgs) != entries*(seconds+1) {
		t.Fatalf("queue holds %d messages, want %d", len(msgs), entries*(seconds+1))
	}
	raw, _ := json.Marshal(msgs[0])
	enq.mu.Lock()
	t.Logf("first message: %s; enqueues refused as duplicates (both loops fired the slot): %d", raw, enq.dups)
	enq.mu.Unlock()
}

// eventually waits (up to 20 s) for cond; it is a wait for an event, not a
// timing assertion.
func schedEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
