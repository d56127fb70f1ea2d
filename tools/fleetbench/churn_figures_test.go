package fleetbench

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/tools/chaos/check"
)

// The churn benchmark's figures about the busy keys, from what is seen
// outside the workers: the task log the busy keys' task program writes (one
// line per run, marked killed when the task got SIGTERM: see
// tools/chaos/task) and the owner of each busy key polled in
// ZooKeeper. Pure, so that TestChurnFigures checks them without servers.

// busyFigures are the busy keys' figures over the churn phase.
type busyFigures struct {
	Runs       int // runs in the phase (started in it, or ended in it)
	Killed     int // of them, runs that did not finish: no execution line, or one marked killed
	Repeated   int // messages started more than once, one of their runs in the phase
	PIDChanges int // consecutive runs of one key on different workers: moves seen in the task log
	KeysKilled int // busy keys with at least one killed run
}

// busyRunFigures counts the busy keys' runs from from on: starts are the
// task program's start lines, ends its execution lines (matched by the
// task's pid). A run is in the phase when it started at or after from or
// ended at or after it; a run that never logged its end (SIGKILL) is taken
// to have ended within maxRun of its start.
func busyRunFigures(starts, ends []check.Execution, from time.Time, maxRun time.Duration) busyFigures {
	var f busyFigures
	end := map[int]check.Execution{}
	for _, e := range ends {
		end[e.PID] = e
	}
	startsOf := map[[2]string]int{}
	inPhase := map[[2]string]bool{}
	byKey := map[string][]check.Execution{}
	keysKilled := map[string]bool{}
	for _, st := range starts {
		k := [2]string{st.Queue, st.ID}
		startsOf[k]++
		byKey[st.Queue] = append(byKey[st.Queue], st)
		e, finished := end[st.PID]
		last := st.Start.Add(maxRun)
		if finished {
			last = e.End
		}
		if st.Start.Before(from) && last.Before(from) {
			continue
		}
		inPhase[k] = true
		f.Runs++
		if !finished || e.Killed {
			f.Killed++
			keysKilled[st.Queue] = true
		}
	}
	for k, n := range startsOf {
		if n > 1 && inPhase[k] {
			f.Repeated++
		}
	}
	for _, runs := range byKey {
		sort.Slice(runs, func(i, j int) bool { return runs[i].Start.Before(runs[j].Start) })
		for i := 1; i < len(runs); i++ {
			if runs[i].WorkerPID != runs[i-1].WorkerPID && !runs[i].Start.Before(from) {
				f.PIDChanges++
			}
		}
	}
	f.KeysKilled = len(keysKilled)
	return f
}

// ownerTracker counts the owner changes of keys polled one at a time: a
// key read with an owner different from its last known one moved. A read
// without an owner (released, not yet claimed) changes nothing.
type ownerTracker struct {
	last  map[string]string
	moves map[string]int
}

// observe records that key's owner was read as member ("" for none); it
// reports whether that is a move, counted only when count is set (before
// the phase the tracker only learns the owners).
func (t *ownerTracker) observe(key, member string, count bool) bool {
	if member == "" {
		return false
	}
	if t.last == nil {
		t.last, t.moves = map[string]string{}, map[string]int{}
	}
	prev, seen := t.last[key]
	t.last[key] = member
	if !seen || prev == member {
		return false
	}
	if count {
		t.moves[key]++
	}
	return count
}

// total is the moves counted and how many keys moved at least once.
func (t *ownerTracker) total() (moves, keys int) {
	for _, n := range t.moves {
		moves += n
		keys++
	}
	return moves, keys
}

// balance is the largest and the smallest count of owned queues per member
// and their ratio (0 when a member owns none).
func balance(owned []int) (most, least int, ratio float64) {
	if len(owned) == 0 {
		return 0, 0, 0
	}
	most, least = owned[0], owned[0]
	for _, n := range owned[1:] {
		most, least = max(most, n), min(least, n)
	}
	if least > 0 {
		ratio = float64(most) / float64(least)
	}
	return most, least, ratio
}

func TestChurnFigures(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1000+int64(s), 0) }
	from := at(10)
	run := func(q, id string, wpid, pid, start, end int, killed bool) (check.Execution, check.Execution) {
		return check.Execution{Queue: q, ID: id, WorkerPID: wpid, PID: pid, Start: at(start)},
			check.Execution{Queue: q, ID: id, WorkerPID: wpid, PID: pid, Start: at(start), End: at(end), Killed: killed}
	}
	var starts, ends []check.Execution
	for _, r := range []struct {
		q, id          string
		wpid, pid      int
		start, end     int
		killed, logged bool
	}{
		{"c-busy-000", "m1", 1, 101, 0, 5, false, true},   // before the phase
		{"c-busy-000", "m2", 1, 102, 5, 12, false, false}, // SIGKILLed in the phase: no end line
		{"c-busy-000", "m2", 2, 103, 13, 20, false, true}, // its repeat, on another worker
		{"c-busy-001", "m3", 1, 104, 0, 2, true, true},    // killed (SIGTERM) before the phase
		{"c-busy-001", "m3", 1, 105, 2, 9, false, true},   // its repeat, done before the phase too
		{"c-busy-002", "m4", 3, 106, 11, 18, true, true},  // killed (SIGTERM) in the phase
		{"c-busy-002", "m4", 3, 107, 18, 24, false, true},
	} {
		st, e := run(r.q, r.id, r.wpid, r.pid, r.start, r.end, r.killed)
		starts = append(starts, st)
		if r.logged {
			ends = append(ends, e)
		}
	}
	f := busyRunFigures(starts, ends, from, 10*time.Second)
	want := busyFigures{Runs: 4, Killed: 2, Repeated: 2, PIDChanges: 1, KeysKilled: 2}
	if f != want {
		t.Errorf("busy figures: want %+v, have %+v", want, f)
	}

	var tr ownerTracker
	for _, o := range []struct {
		key, member string
		count, move bool
	}{
		{"a", "w1", false, false}, {"a", "w2", false, false}, // learnt before the phase
		{"a", "w2", true, false}, {"a", "", true, false}, // released: not a move yet
		{"a", "w3", true, true}, {"b", "w1", true, false}, {"b", "w1", true, false}, {"a", "w1", true, true},
	} {
		if have := tr.observe(o.key, o.member, o.count); have != o.move {
			t.Errorf("observe(%s, %q, %v): want move %v, have %v", o.key, o.member, o.count, o.move, have)
		}
	}
	if moves, keys := tr.total(); moves != 2 || keys != 1 {
		t.Errorf("owner moves: want 2 moves of 1 key, have %d of %d", moves, keys)
	}

	if most, least, ratio := balance([]int{250, 200, 240, 260}); most != 260 || least != 200 || ratio != 1.3 {
		t.Errorf("balance: want 260/200 = 1.3, have %d/%d = %g", most, least, ratio)
	}
	if _, least, ratio := balance([]int{3, 0}); least != 0 || ratio != 0 {
		t.Errorf("balance with an empty member: want least 0 and ratio 0, have %d and %g", least, ratio)
	}
}

func TestChurnSizesFromTheEnvironment(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	sz, err := churnSizesFromEnv(env(nil))
	want := defaultChurnSizes()
	want.RetireAfter = 100 * time.Second // 100,000 keys at 1,000/s
	if err != nil || sz != want {
		t.Fatalf("no settings: want %+v, have %+v (err %v)", want, sz, err)
	}
	sz, err = churnSizesFromEnv(env(map[string]string{"DROVER_CHURNBENCH_SIZE": "smoke", "DROVER_CHURNBENCH_BUSY": "20", "DROVER_CHURNBENCH_IDLE_WINDOW": "0s"}))
	want = smokeChurnSizes()
	want.Busy, want.IdleWindow, want.RetireAfter = 20, 0, 20*time.Second
	if err != nil || sz != want {
		t.Fatalf("smoke with overrides: want %+v, have %+v (err %v)", want, sz, err)
	}
	for _, c := range []struct{ key, value string }{
		{"DROVER_CHURNBENCH_SIZE", "huge"}, {"DROVER_CHURNBENCH_KEYS", "0"}, {"DROVER_CHURNBENCH_RATE", "fast"},
		{"DROVER_CHURNBENCH_DURATION", "0s"}, {"DROVER_CHURNBENCH_RETIRE_AFTER", "-1s"},
	} {
		if _, err := churnSizesFromEnv(env(map[string]string{c.key: c.value})); err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s=%s: want an error naming %s, have %v", c.key, c.value, c.key, err)
		}
	}
}
