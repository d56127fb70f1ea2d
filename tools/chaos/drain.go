package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/clock"
	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/tools/chaos/check"
)

// waitOwned waits until a member owns every queue.
func waitOwned(ctx context.Context, c *cluster, queues []string, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		unowned := 0
		s, err := c.zk.session(ctx)
		if err != nil {
			return err
		}
		for _, q := range queues {
			if _, err := s.Claims().Owner(ctx, q); err != nil {
				unowned++
			}
		}
		if unowned == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d queues still unowned after %s", unowned, len(queues), bound)
		}
		if !clock.Sleep(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// readSchedules reads every entry's next pending slot (after the schedulers
// were stopped).
func readSchedules(ctx context.Context, mgr *scheduler.Manager) ([]check.Schedule, error) {
	var (
		es  []scheduler.Entry
		err error
	)
	for try := 0; try < 50; try++ {
		if es, err = mgr.List(ctx); err == nil {
			break
		}
		clock.Sleep(ctx, 200*time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("read schedules: %w", err)
	}
	out := make([]check.Schedule, 0, len(es))
	for _, e := range es {
		out = append(out, check.Schedule{Name: e.Name, Queue: e.Definition.Queue, Every: e.Definition.Schedule.Every, Next: e.Next})
	}
	return out, nil
}

// follower reads the task log as it grows and keeps what ran. It is safe
// for concurrent use.
type follower struct {
	f *os.File
	r *check.TaskLogReader

	mu      sync.Mutex
	ran     map[string]bool           // queue + " " + id
	ranLoad map[string]int            // queue → distinct load messages that ran
	slots   map[string]map[int64]bool // schedule → fired slots
	maxPos  map[string]int64          // queue → highest position that ran

	// The drain's clock (waitAll): the real one, a fake in tests.
	now   func() time.Time
	sleep func(context.Context, time.Duration) bool
}

func newFollower(path string) (*follower, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open task log: %w", err)
	}
	return &follower{f: f, r: check.NewTaskLogReader(f), ran: map[string]bool{}, ranLoad: map[string]int{},
		slots: map[string]map[int64]bool{}, maxPos: map[string]int64{}, now: time.Now, sleep: clock.Sleep}, nil
}

func (fl *follower) close() { fl.f.Close() }

func (fl *follower) update() error {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	es, err := fl.r.Next()
	if err != nil {
		return err
	}
	for _, e := range es {
		fl.maxPos[e.Queue] = max(fl.maxPos[e.Queue], e.Position)
		name, slot, isSlot := check.SlotOf(e.ID)
		if k := e.Queue + " " + e.ID; !fl.ran[k] {
			fl.ran[k] = true
			if !isSlot {
				fl.ranLoad[e.Queue]++
			}
		}
		if isSlot {
			if fl.slots[name] == nil {
				fl.slots[name] = map[int64]bool{}
			}
			fl.slots[name][slot] = true
		}
	}
	return nil
}

// follow updates every interval until ctx ends.
func (fl *follower) follow(ctx context.Context, interval time.Duration) {
	for clock.Sleep(ctx, interval) {
		fl.update()
	}
}

// loadRan returns how many distinct load messages of queue ran.
func (fl *follower) loadRan(queue string) int {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return fl.ranLoad[queue]
}

func (fl *follower) maxPosition(queue string) int64 {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return fl.maxPos[queue]
}

// missing counts the expected executions not in the log yet: confirmed
// enqueues, and each schedule's slots from its first fired one to its next
// pending one.
func (fl *follower) missing(enq []check.Enqueued, scheds []check.Schedule) int {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	n := 0
	for _, m := range enq {
		if !fl.ran[m.Queue+" "+m.ID] {
			n++
		}
	}
	for _, s := range scheds {
		slots := fl.slots[s.Name]
		if len(slots) == 0 {
			n++
			continue
		}
		first := int64(1 << 62)
		for t := range slots {
			first = min(first, t)
		}
		step := max(int64(s.Every/time.Second), 1)
		for t := first; t < s.Next.Unix(); t += step {
			if !slots[t] {
				n++
			}
		}
	}
	return n
}

// drainResult is what waitAll saw.
type drainResult struct {
	atStart, missing int  // expected executions missing when it began and when it returned
	stalled          bool // it gave up because the count stopped falling
}

// waitAll waits until nothing expected is missing, and returns how many
// are. It gives up when the count has not fallen for stall (the fleet is
// stuck, or some queue is: the others ran out), at deadline, or when ctx
// ends. A backlog that keeps falling is waited for: a host slower than the
// load runs behind during the phase, and how far behind says nothing about
// the faults (the report gives the drain's length and its backlog).
func (fl *follower) waitAll(ctx context.Context, enq []check.Enqueued, scheds []check.Schedule, stall time.Duration, deadline time.Time) drainResult {
	fl.update()
	res := drainResult{atStart: fl.missing(enq, scheds)}
	best, progress := res.atStart, fl.now()
	for {
		res.missing = fl.missing(enq, scheds)
		now := fl.now()
		if res.missing < best {
			best, progress = res.missing, now
		}
		res.stalled = now.Sub(progress) > stall
		if res.missing == 0 || res.stalled || now.After(deadline) || !fl.sleep(ctx, 250*time.Millisecond) {
			return res
		}
		fl.update()
	}
}

// waitOffsets waits until every queue's committed offset covers the last
// position that ran or was enqueued and the queue's log has nothing after
// it, then returns the offsets (as last read, at the deadline).
func waitOffsets(ctx context.Context, c *cluster, queues []string, fl *follower, enq []check.Enqueued, deadline time.Time) map[string]int64 {
	want := map[string]int64{}
	for _, m := range enq {
		want[m.Queue] = max(want[m.Queue], m.Position)
	}
	final := map[string]int64{}
	for {
		fl.update()
		behind := 0
		for _, q := range queues {
			s, err := c.zk.session(ctx)
			if err != nil {
				behind++
				continue
			}
			on, err := s.Claims().Offset(ctx, q)
			if err != nil {
				behind++
				continue
			}
			final[q] = int64(on.Offset.Position)
			last, err := c.store.Inspector().LastPosition(ctx, q)
			if errors.Is(err, drover.ErrNotFound) {
				last, err = 0, nil // trimmed to nothing
			}
			if err != nil {
				behind++
				continue
			}
			if final[q] < max(want[q], fl.maxPosition(q), int64(last)) {
				behind++
			}
		}
		if behind == 0 || time.Now().After(deadline) || !clock.Sleep(ctx, 250*time.Millisecond) {
			return final
		}
	}
}

// deadLetters lists every queue's dead letters.
func deadLetters(ctx context.Context, c *cluster, queues []string) ([]check.DeadLetter, error) {
	var out []check.DeadLetter
	for _, q := range queues {
		for off := 0; ; {
			dls, err := c.store.Dead().DeadLetters(ctx, q, off, 1000)
			if err != nil {
				return nil, err
			}
			for _, d := range dls {
				out = append(out, check.DeadLetter{Queue: q, ID: d.ID, Reason: d.Failure.Reason})
			}
			if len(dls) < 1000 {
				break
			}
			off += len(dls)
		}
	}
	return out, nil
}

// pending lists what is still in each queue's log after its committed
// offset (after the workers stopped).
func pending(ctx context.Context, c *cluster, final map[string]int64) ([]check.Enqueued, error) {
	var out []check.Enqueued
	for q, off := range final {
		after := drover.Position(off)
		for {
			es, err := c.store.Log().ReadAfter(ctx, q, after, 1000)
			if err != nil {
				return nil, fmt.Errorf("read pending messages of %s: %w", q, err)
			}
			for _, e := range es {
				out = append(out, check.Enqueued{Queue: q, ID: e.ID, Position: int64(e.Position)})
			}
			if len(es) < 1000 {
				break
			}
			after = es[len(es)-1].Position
		}
	}
	return out, nil
}
