package check

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 2, 15, 4, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// clean is a run without faults: queue "o" (ordered) and "u" each run three
// messages once, one after another, and schedule "tick" fires slots
// t0+1s … t0+3s into "u"; offsets only move forward.
func clean() Input {
	in := Input{
		Ordered: map[string]bool{"o": true},
		Policy:  Policy{SessionTimeout: 4 * time.Second, CommitWindow: time.Second},
	}
	pos := int64(100)
	for i, q := range []string{"o", "o", "o", "u", "u", "u"} {
		id := fmt.Sprintf("m-%d", i)
		pos++
		in.Enqueued = append(in.Enqueued, Enqueued{Queue: q, ID: id, Position: pos})
		in.Executions = append(in.Executions, Execution{Queue: q, ID: id, Position: pos, WorkerPID: 10, PID: 1000 + i,
			Start: at(100 * i), End: at(100*i + 50)})
	}
	for s := 1; s <= 3; s++ {
		pos++
		in.Executions = append(in.Executions, Execution{Queue: "u", ID: fmt.Sprintf("sched:tick:%d", t0.Unix()+int64(s)),
			Position: pos, WorkerPID: 10, PID: 2000 + s, Start: at(1000 * s), End: at(1000*s + 20)})
	}
	in.Schedules = []Schedule{{Name: "tick", Queue: "u", Every: time.Second, Next: t0.Add(4 * time.Second)}}
	in.Offsets = []OffsetSample{
		{At: at(0), Queue: "o", Version: 1, Position: 0},
		{At: at(500), Queue: "o", Version: 2, Position: 103},
		{At: at(600), Queue: "o", Version: 3, Position: 103}, // a claim: version bumps, position stays
	}
	in.FinalOffsets = map[string]int64{"o": 103, "u": pos}
	return in
}

func wantOnly(t *testing.T, r *Report, inv Invariant, n int) {
	t.Helper()
	if r.ViolationCounts[inv] != n {
		t.Errorf("%s: want %d violations, have %d (%v)", inv, n, r.ViolationCounts[inv], r.Violations)
	}
	for k, v := range r.ViolationCounts {
		if k != inv {
			t.Errorf("want only %s violations, also have %d of %s: %v", inv, v, k, r.Violations)
		}
	}
}

func TestCleanRunPasses(t *testing.T) {
	r := Check(clean())
	if !r.OK() {
		t.Fatalf("want no violations, have %v", r.Violations)
	}
	if r.Enqueued != 6 || r.Executions != 9 || r.SlotsExpected != 3 || r.Lost != 0 || r.Duplicates != 0 {
		t.Fatalf("want 6 enqueued, 9 executions, 3 slots, nothing lost or repeated; have %+v", r)
	}
}

func TestPlantedLossIsReported(t *testing.T) {
	in := clean()
	in.Executions = in.Executions[1:] // m-0 never ran
	in.DeadLetters = []DeadLetter{{Queue: "o", ID: "m-0", Reason: "no route"}}
	r := Check(in)
	wantOnly(t, r, Lost, 1)
	if r.Lost != 1 || !strings.Contains(r.Violations[0].Detail, "o/m-0") || !strings.Contains(r.Violations[0].Detail, "dead letters: no route") {
		t.Fatalf("want m-0 reported lost and dead-lettered, have %v", r.Violations)
	}
}

func TestPlantedOrderedOverlapIsReported(t *testing.T) {
	in := clean()
	in.Executions[1].Start = at(40) // m-1 starts before m-0 (0–50 ms) ended
	r := Check(in)
	wantOnly(t, r, OrderedOverlap, 1)
	if r.OrderedOverlaps != 1 {
		t.Fatalf("want 1 ordered overlap, have %d", r.OrderedOverlaps)
	}
}

func TestOrderedOverlapIsReportedEvenAtAFault(t *testing.T) {
	in := clean()
	in.Executions[1].Start, in.Executions[1].WorkerPID = at(40), 11
	in.Faults = []Fault{{Kind: WorkerStop, Target: "w1", PIDs: []int{10}, Start: at(10), End: at(5000)}}
	wantOnly(t, Check(in), OrderedOverlap, 1)
}

func TestPlantedCrossWorkerOverlapIsReported(t *testing.T) {
	in := clean()
	// m-4 on another worker while m-3 (300–350 ms) runs on worker 10.
	in.Executions[4].Start, in.Executions[4].WorkerPID = at(320), 11
	r := Check(in)
	wantOnly(t, r, CrossWorkerOverlap, 1)

	// The same overlap with worker 10 cut off ZooKeeper at 330 ms is a
	// zombie's.
	in.Faults = []Fault{{Kind: ZKCutLong, Target: "w1", PIDs: []int{10}, Start: at(330), End: at(6000)}}
	r = Check(in)
	if !r.OK() || r.ZombieOverlaps != 1 {
		t.Fatalf("want the overlap excused as a zombie's, have %d zombie overlaps and %v", r.ZombieOverlaps, r.Violations)
	}
	// Frozen (SIGSTOP), its tasks are under its task lease: no excuse.
	for _, k := range []Kind{WorkerStop, WorkerFreeze} {
		in.Faults[0].Kind = k
		wantOnly(t, Check(in), LeasedOverlap, 1)
	}
	// A graceful restart excuses nothing.
	in.Faults[0].Kind = RollingRestart
	wantOnly(t, Check(in), CrossWorkerOverlap, 1)
}

func TestOneWorkerRunningAnUnorderedQueueConcurrentlyIsFine(t *testing.T) {
	in := clean()
	in.Executions[4].Start = at(320) // same worker as m-3
	if r := Check(in); !r.OK() {
		t.Fatalf("want no violations, have %v", r.Violations)
	}
}

func TestPlantedDoubleFireIsReported(t *testing.T) {
	in := clean()
	second := in.Executions[7] // slot t0+2s again, at a new position, later
	second.Position += 1000
	second.Start, second.End = at(3500), at(3520)
	in.Executions = append(in.Executions, second)
	in.FinalOffsets["u"] = second.Position
	r := Check(in)
	if r.ViolationCounts[SlotFiredTwice] != 1 || r.SlotsFiredTwice != 1 {
		t.Fatalf("want the double fire reported, have %v", r.Violations)
	}
	// Two runs outside any fault are also a duplicate.
	if r.ViolationCounts[DuplicateOutside] != 1 || len(r.ViolationCounts) != 2 {
		t.Fatalf("want a double fire and a duplicate, have %v", r.ViolationCounts)
	}
}

func TestPlantedMissedSlotIsReported(t *testing.T) {
	in := clean()
	in.Executions = append(in.Executions[:7], in.Executions[8:]...) // drop slot t0+2s
	r := Check(in)
	wantOnly(t, r, SlotMissed, 1)
	if !strings.Contains(r.Violations[0].Detail, "sched:tick:") {
		t.Fatalf("want the slot's id in the report, have %q", r.Violations[0].Detail)
	}
	// The entry's next pending slot is t0+5s: t0+4s is missed as well.
	in.Schedules[0].Next = t0.Add(5 * time.Second)
	wantOnly(t, Check(in), SlotMissed, 2)
}

// A slot whose first attempt was cut short by a fault (killed: it logs
// nothing) ran at attempt 1 under the next owner: it fired.
func TestASlotRunOnlyAtItsSecondAttemptFired(t *testing.T) {
	in := clean()
	if _, _, ok := SlotOf(in.Executions[7].ID); !ok {
		t.Fatalf("want execution 7 to be slot t0+2s, have %s", in.Executions[7].ID)
	}
	in.Executions[7].Attempt = 1
	if r := Check(in); len(r.ViolationCounts) != 0 {
		t.Fatalf("want no violation, have %v", r.ViolationCounts)
	}
}

func TestDuplicateOutsideAFaultIsReported(t *testing.T) {
	in := clean()
	again := in.Executions[3]
	again.WorkerPID, again.Start, again.End = 11, at(4500), at(4550)
	in.Executions = append(in.Executions, again)
	wantOnly(t, Check(in), DuplicateOutside, 1)
}

func TestDuplicateInFlightAtAFaultIsExcused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault Fault
		ok    bool
	}{
		// m-3 ended at 350 ms; the worker was killed 500 ms later, within
		// the 1 s commit window.
		{"killed after it finished", Fault{Kind: WorkerKill, PIDs: []int{10}, Start: at(850), End: at(900)}, true},
		{"killed long after it finished", Fault{Kind: WorkerKill, PIDs: []int{10}, Start: at(1500), End: at(1600)}, false},
		{"another worker killed", Fault{Kind: WorkerKill, PIDs: []int{12}, Start: at(340), End: at(400)}, false},
		{"its ZooKeeper links cut", Fault{Kind: ZKCutLong, PIDs: []int{10}, Start: at(340), End: at(6000)}, true},
		{"ZooKeeper leader stopped", Fault{Kind: ZKLeaderStop, Start: at(340), End: at(6000)}, true},
		{"Redis restarted", Fault{Kind: RedisRestart, Start: at(340), End: at(1000)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := clean()
			again := in.Executions[3]
			again.WorkerPID, again.Start, again.End = 11, at(7000), at(7050)
			in.Executions = append(in.Executions, again)
			in.Faults = []Fault{tc.fault}
			r := Check(in)
			if tc.ok {
				if !r.OK() || r.DuplicatesAt[tc.fault.Kind] != 1 {
					t.Fatalf("want the duplicate excused by %s, have %v (at %v)", tc.fault.Kind, r.Violations, r.DuplicatesAt)
				}
				return
			}
			wantOnly(t, r, DuplicateOutside, 1)
		})
	}
}

func TestZombieStartedAfterSIGCONTIsExcusedAsDuplicate(t *testing.T) {
	in := clean()
	// Worker 11 took the queue over and ran m-3 at 5 s; the stopped worker
	// 10, continued at 6 s, ran it again before it noticed its session was
	// gone.
	in.Executions[3].WorkerPID, in.Executions[3].Start, in.Executions[3].End = 11, at(5000), at(5050)
	zombie := in.Executions[3]
	zombie.WorkerPID, zombie.Start, zombie.End = 10, at(6010), at(6060)
	in.Executions = append(in.Executions, zombie)
	in.Faults = []Fault{{Kind: WorkerStop, PIDs: []int{10}, Start: at(400), End: at(6000)}}
	if r := Check(in); !r.OK() || r.Duplicates != 1 {
		t.Fatalf("want one excused duplicate, have %d and %v", r.Duplicates, r.Violations)
	}
}

func TestPlantedDoubleEnqueueIsReported(t *testing.T) {
	in := clean()
	again := in.Executions[4]
	again.Position += 500
	again.WorkerPID, again.Start, again.End = 11, at(7000), at(7050)
	in.Executions = append(in.Executions, again)
	in.Faults = []Fault{{Kind: WorkerKill, PIDs: []int{10}, Start: at(450), End: at(500)}}
	in.FinalOffsets["u"] = again.Position
	wantOnly(t, Check(in), DoubleEnqueue, 1)
}

func TestPlantedOffsetRegressionIsReported(t *testing.T) {
	in := clean()
	in.Offsets = append(in.Offsets, OffsetSample{At: at(700), Queue: "o", Version: 4, Position: 101, Member: "w2"})
	r := Check(in)
	wantOnly(t, r, OffsetBackwards, 1)
	if !strings.Contains(r.Violations[0].Detail, "w2") {
		t.Fatalf("want the writer named, have %q", r.Violations[0].Detail)
	}
}

func TestOffsetBehindAfterDrainIsReported(t *testing.T) {
	in := clean()
	in.FinalOffsets["u"] = 104
	wantOnly(t, Check(in), OffsetBehind, 1)
}

func TestMarkdownShowsVerdictAndViolations(t *testing.T) {
	in := clean()
	in.Executions = in.Executions[1:]
	var b bytes.Buffer
	Check(in).Markdown(&b, Run{Command: "go run ./tools/chaos -duration 1m", Duration: time.Minute, Seed: 7})
	for _, want := range []string{"**FAIL**", "| lost | 1 |", "go run ./tools/chaos -duration 1m", "| worker-kill | 0 | 0 |", "- lost: o/m-0"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("want %q in the report:\n%s", want, b.String())
		}
	}
}

func TestTaskLogRoundTripAndPartialLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tr := NewTaskLogReader(r)
	e := Execution{Queue: "q1", ID: "sched:a:b:1700000000", Attempt: 2, Position: 1700000000123456, WorkerPID: 7, PID: 8,
		Start: time.UnixMicro(1700000000000001), End: time.UnixMicro(1700000000000999)}
	line := FormatExecution(e)
	f.WriteString(line + "garbage\n" + line[:10])
	got, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != e || tr.Malformed != 1 {
		t.Fatalf("want [%+v] and 1 malformed line, have %+v and %d", e, got, tr.Malformed)
	}
	f.WriteString(line[10:])
	if got, _ = tr.Next(); len(got) != 1 || got[0] != e {
		t.Fatalf("want the completed line, have %+v", got)
	}
	if name, slot, ok := SlotOf(e.ID); !ok || name != "a:b" || slot != 1700000000 {
		t.Fatalf("SlotOf(%q): want a:b 1700000000, have %q %d %v", e.ID, name, slot, ok)
	}
}

func TestObservedSessionLossExcusesAndIsCountedWhenUnprovoked(t *testing.T) {
	in := clean()
	again := in.Executions[3]
	again.WorkerPID, again.Start, again.End = 11, at(7000), at(7050)
	in.Executions = append(in.Executions, again)
	// Worker 10 reported its session lost at 2 s (silent since 0 ms).
	in.Faults = []Fault{{Kind: SessionLost, PIDs: []int{10}, Start: at(0), End: at(2000)}}
	r := Check(in)
	if !r.OK() || r.DuplicatesAt[SessionLost] != 1 || r.UnprovokedSessionLosses != 1 {
		t.Fatalf("want the duplicate excused by the unprovoked session loss, have %v, %v, %d unprovoked", r.Violations, r.DuplicatesAt, r.UnprovokedSessionLosses)
	}
	in.Faults = append(in.Faults, Fault{Kind: ZKCutLong, PIDs: []int{10}, Start: at(500), End: at(1500)})
	if r := Check(in); r.UnprovokedSessionLosses != 0 {
		t.Fatalf("want the loss explained by the cut, have %d unprovoked", r.UnprovokedSessionLosses)
	}
}

func TestZombieStartsAreCounted(t *testing.T) {
	in := clean()
	// Worker 10 stopped 100–600 ms, reported its session lost at 700 ms:
	// m-5 (500–550 ms) started while stopped (cannot happen, not counted),
	// sched slot 1 at 1000 ms is after the report and its exec slack;
	// nothing counted. Move m-5 to 900 ms: one zombie start.
	in.Faults = []Fault{
		{Kind: WorkerStop, PIDs: []int{10}, Start: at(100), End: at(600)},
		{Kind: SessionLost, PIDs: []int{10}, Start: at(-3300), End: at(700)},
	}
	if r := Check(in); r.ZombieStarts != 0 {
		t.Fatalf("want no zombie start, have %d: %v", r.ZombieStarts, r.ZombieStartExamples)
	}
	in.Executions[5].Start, in.Executions[5].End = at(900), at(930) // within the exec slack
	in.Executions = in.Executions[:6]                               // drop the schedule's slots
	if r := Check(in); r.ZombieStarts != 1 || !strings.Contains(r.ZombieStartExamples[0], "u/m-5") {
		t.Fatalf("want m-5 counted as a zombie start, have %d: %v", r.ZombieStarts, r.ZombieStartExamples)
	}
}

func TestPlantedRunAfterCommitIsReported(t *testing.T) {
	in := clean()
	// o's offset reached 103 (m-0…m-2) by 500 ms; m-1 runs again at 900 ms
	// on another worker, which no fault covers.
	again := in.Executions[1]
	again.WorkerPID, again.Start, again.End = 11, at(900), at(950)
	in.Executions = append(in.Executions, again)
	r := Check(in)
	if r.ViolationCounts[RanAfterCommit] != 1 || r.ViolationCounts[DuplicateOutside] != 1 || len(r.ViolationCounts) != 2 {
		t.Fatalf("want a run after commit and a duplicate, have %v", r.Violations)
	}
	// A zombie resumed at 850 ms is excused.
	in.Faults = []Fault{{Kind: WorkerStop, PIDs: []int{11}, Start: at(0), End: at(850)}}
	if r := Check(in); !r.OK() {
		t.Fatalf("want the zombie's run excused, have %v", r.Violations)
	}
}

func TestNeverRunButStillQueuedIsUnfinishedNotLost(t *testing.T) {
	in := clean()
	in.Executions = append(in.Executions[1:7], in.Executions[8:]...) // m-0 and slot t0+2s never ran
	in.Pending = []Enqueued{{Queue: "o", ID: "m-0", Position: 101}, {Queue: "u", ID: fmt.Sprintf("sched:tick:%d", t0.Unix()+2)}}
	r := Check(in)
	wantOnly(t, r, DrainIncomplete, 2)
	if r.Lost != 0 || r.SlotsMissed != 0 || r.Unfinished != 2 {
		t.Fatalf("want 2 unfinished, nothing lost or missed; have %d, %d, %d", r.Unfinished, r.Lost, r.SlotsMissed)
	}
}

// A host freeze stops the worker's tasks too: an overlap only while one of
// them was stopped is no overlap; one after the thaw is.
func TestHostFreezeOverlapCountsOnlyRunningTime(t *testing.T) {
	in := clean()
	// m-3 (300–350 ms) on worker 10, frozen 310–400 ms with its tasks;
	// m-4 on worker 11 from 320 to 390 ms: they never ran at once.
	in.Executions[4].Start, in.Executions[4].End, in.Executions[4].WorkerPID = at(320), at(390), 11
	in.Faults = []Fault{{Kind: HostFreeze, Target: "w1", PIDs: []int{10}, Start: at(310), End: at(400)}}
	in.LeaseFires = []LeaseFire{{WorkerPID: 10, At: at(402), Groups: 1}}
	r := Check(in)
	if !r.OK() || r.StoppedOverlaps != 1 {
		t.Fatalf("want one overlap while stopped and no violation, have %d and %v", r.StoppedOverlaps, r.Violations)
	}
	if ds := r.LeaseFireDelays[HostFreeze]; len(ds) != 1 || ds[0] != 92*time.Millisecond {
		t.Fatalf("want one lease fire 92ms after the freeze began, have %v", ds)
	}
	// Thawed at 340 ms while m-4 still runs: they ran at once for 10 ms,
	// the thaw race (m-3 ended 10 ms after the thaw).
	in.Faults[0].End = at(340)
	r = Check(in)
	if !r.OK() || r.ThawRaceOverlaps != 1 || r.MaxThawRace != 10*time.Millisecond {
		t.Fatalf("want one thaw race of 10ms and no violation, have %d of %s and %v", r.ThawRaceOverlaps, r.MaxThawRace, r.Violations)
	}
	// A task that ran on for more than ThawRaceBound was not killed by its
	// lease: a violation.
	in.Executions[3].End = at(340).Add(ThawRaceBound + time.Millisecond)
	wantOnly(t, Check(in), LeasedOverlap, 1)
}

// TestGracefulStopThatKillsOrRepeatsIsAViolation: a rolling restart drains,
// so a task killed during one, or a message run again after a run that
// ended during one, is a violation and never an excused duplicate (issue
// 29); a kill outside any rolling restart (a lease firing during a freeze)
// is not.
func TestGracefulStopThatKillsOrRepeatsIsAViolation(t *testing.T) {
	restart := Fault{Kind: RollingRestart, Target: "workers", PIDs: []int{10, 11}, Start: at(2000), End: at(9000)}

	t.Run("killed", func(t *testing.T) {
		in := clean()
		in.Faults = []Fault{restart}
		// u/m-3 was killed on worker 10 during the restart; its rerun on 11 finished.
		in.Executions = append(in.Executions, Execution{Queue: "u", ID: "m-3", Position: 104, WorkerPID: 10, PID: 3000,
			Start: at(1500), End: at(2500), Killed: true})
		r := Check(in)
		wantOnly(t, r, GracefulKill, 1)
		if r.Executions != 9 || r.Duplicates != 0 {
			t.Fatalf("a killed run is no execution: want 9 executions and no duplicate, have %+v", r)
		}
	})
	t.Run("repeated", func(t *testing.T) {
		in := clean()
		in.Faults = []Fault{restart, {Kind: SessionLost, Target: "w1", PIDs: []int{10}, Start: at(2400), End: at(2400)}}
		// u/m-4 finished on 10 during the restart and ran again on 11: a
		// session loss would excuse it, a graceful stop does not.
		in.Executions = append(in.Executions, Execution{Queue: "u", ID: "m-4", Position: 105, WorkerPID: 11, PID: 3001,
			Start: at(3500), End: at(3600)})
		in.Executions[4].Start, in.Executions[4].End = at(2000), at(2500)
		r := Check(in)
		wantOnly(t, r, GracefulRepeat, 1)
		if r.DuplicatesAt[RollingRestart] != 0 || r.DuplicatesAt[SessionLost] != 0 {
			t.Fatalf("a repeat after a graceful stop must not be excused: %v", r.DuplicatesAt)
		}
	})
	t.Run("repeated, ended before its own worker was stopped", func(t *testing.T) {
		// The restart stops 11 first and 10 later: m-4 ended on 10 before
		// its SIGTERM, inside a session loss of 10 (a ZooKeeper stall, no
		// fault injected), and ran again on 11. An ordinary run excused by
		// the session loss, not a graceful stop's repeat.
		in := clean()
		r := restart
		r.StopAt = map[int]time.Time{11: at(2000), 10: at(6000)}
		in.Faults = []Fault{r, {Kind: SessionLost, Target: "w1", PIDs: []int{10}, Start: at(2400), End: at(2400)}}
		in.Executions = append(in.Executions, Execution{Queue: "u", ID: "m-4", Position: 105, WorkerPID: 11, PID: 3001,
			Start: at(3500), End: at(3600)})
		in.Executions[4].Start, in.Executions[4].End = at(2000), at(2500)
		rep := Check(in)
		if !rep.OK() || rep.DuplicatesAt[SessionLost] != 1 {
			t.Fatalf("want the repeat excused by the session loss, have %v at %v", rep.Violations, rep.DuplicatesAt)
		}
		// The same run ending after 10's SIGTERM is a graceful stop's repeat.
		r.StopAt[10] = at(2200)
		in.Faults[0] = r
		wantOnly(t, Check(in), GracefulRepeat, 1)
	})
	t.Run("repeated after a session loss another worker shared", func(t *testing.T) {
		// m-4 ended on 10 during its graceful stop, inside a loss of 10's
		// session that worker 12, not stopping, shared 0.3 s later (a
		// ZooKeeper stall, no fault injected): the release could not be
		// written, and the repeat is the session loss's.
		in := clean()
		r := restart
		r.StopAt = map[int]time.Time{10: at(2000), 11: at(7000)}
		in.Faults = []Fault{r,
			{Kind: SessionLost, Target: "w1", PIDs: []int{10}, Start: at(2400), End: at(2600)},
			{Kind: SessionLost, Target: "w3", PIDs: []int{12}, Start: at(2900), End: at(2900)}}
		in.Executions = append(in.Executions, Execution{Queue: "u", ID: "m-4", Position: 105, WorkerPID: 11, PID: 3001,
			Start: at(3500), End: at(3600)})
		in.Executions[4].Start, in.Executions[4].End = at(2000), at(2500)
		rep := Check(in)
		if !rep.OK() || rep.DuplicatesAt[SessionLost] != 1 || rep.GracefulRepeatsExcused != 1 {
			t.Fatalf("want the repeat excused by the shared session loss and counted, have %v at %v, %d counted", rep.Violations, rep.DuplicatesAt, rep.GracefulRepeatsExcused)
		}
		// The other worker's loss came during its own graceful stop: not
		// corroboration, the repeat is the graceful stop's.
		r.StopAt[12] = at(2800)
		in.Faults[0] = r
		wantOnly(t, Check(in), GracefulRepeat, 1)
		// Nor is a loss of another worker more than a session timeout away.
		delete(r.StopAt, 12)
		in.Faults[2].Start, in.Faults[2].End = at(2600).Add(in.Policy.SessionTimeout+time.Millisecond), at(2600).Add(in.Policy.SessionTimeout+time.Millisecond)
		wantOnly(t, Check(in), GracefulRepeat, 1)
	})
	t.Run("repeated inside an injected ZooKeeper fault", func(t *testing.T) {
		in := clean()
		in.Faults = []Fault{restart, {Kind: ZKLeaderStop, Target: "zk2", Start: at(2300), End: at(2700)}}
		in.Executions = append(in.Executions, Execution{Queue: "u", ID: "m-4", Position: 105, WorkerPID: 11, PID: 3001,
			Start: at(3500), End: at(3600)})
		in.Executions[4].Start, in.Executions[4].End = at(2000), at(2500)
		rep := Check(in)
		if !rep.OK() || rep.DuplicatesAt[ZKLeaderStop] != 1 {
			t.Fatalf("want the repeat excused by the injected fault, have %v at %v", rep.Violations, rep.DuplicatesAt)
		}
	})
	t.Run("repeated inside an election of the ZooKeeper ensemble", func(t *testing.T) {
		// m-4 ended on 10 during its graceful stop; 0.2 s later the
		// ensemble lost its leader with no fault injected (read from the
		// servers' logs) and the release failed: the repeat is the
		// election's. Without the election it is the graceful stop's.
		in := clean()
		r := restart
		r.StopAt = map[int]time.Time{10: at(2000), 11: at(7000)}
		in.Faults = []Fault{r, {Kind: ZKElection, Target: "zookeeper", Start: at(2700), End: at(3400)}}
		in.Executions = append(in.Executions, Execution{Queue: "u", ID: "m-4", Position: 105, WorkerPID: 11, PID: 3001,
			Start: at(3500), End: at(3600)})
		in.Executions[4].Start, in.Executions[4].End = at(2000), at(2500)
		rep := Check(in)
		if !rep.OK() || rep.DuplicatesAt[ZKElection] != 1 || rep.GracefulRepeatsExcused != 1 {
			t.Fatalf("want the repeat excused by the election and counted, have %v at %v, %d counted", rep.Violations, rep.DuplicatesAt, rep.GracefulRepeatsExcused)
		}
		in.Faults = in.Faults[:1]
		wantOnly(t, Check(in), GracefulRepeat, 1)
	})
	t.Run("killed by a lease outside a rolling restart", func(t *testing.T) {
		in := clean()
		in.Faults = []Fault{{Kind: WorkerFreeze, Target: "w1", PIDs: []int{10}, Start: at(2000), End: at(7000)}}
		in.Executions = append(in.Executions, Execution{Queue: "u", ID: "m-3", Position: 104, WorkerPID: 10, PID: 3000,
			Start: at(1500), End: at(3500), Killed: true})
		if r := Check(in); !r.OK() {
			t.Fatalf("want no violation, have %v", r.Violations)
		}
	})
}

func TestKilledTaskLogLineRoundTrips(t *testing.T) {
	e := Execution{Queue: "q", ID: "m", Attempt: 2, Position: 7, WorkerPID: 10, PID: 11, Start: at(1), End: at(2), Killed: true}
	line := FormatExecution(e)
	if !strings.HasSuffix(line, " killed\n") {
		t.Fatalf("want the line marked killed, have %q", line)
	}
	got, err := ParseExecution(strings.TrimSuffix(line, "\n"))
	if err != nil || !got.Start.Equal(e.Start) || !got.End.Equal(e.End) || got.Killed != e.Killed || got.ID != e.ID || got.PID != e.PID {
		t.Fatalf("want %+v back, have %+v, %v", e, got, err)
	}
	if _, err := ParseExecution("q m 1 2 3 4 5 6 maybe"); err == nil {
		t.Fatal("want a 9th field other than killed refused")
	}
}

// A queue that changed owner while no worker reached Redis is a violation;
// a redis-cut's hand-over time is gathered for the report.
func TestQueuesMovedWhileRedisIsUnreachableAreAViolation(t *testing.T) {
	in := clean()
	in.Faults = []Fault{
		{Kind: RedisCutAll, Target: "workers", PIDs: []int{10, 11}, Start: at(2000), End: at(9000), Moved: 3},
		{Kind: RedisCut, Target: "w1", PIDs: []int{10}, Start: at(12000), End: at(20000), HandOver: 4 * time.Second},
		{Kind: RedisCut, Target: "w1", PIDs: []int{10}, Start: at(22000), End: at(30000)},
	}
	r := Check(in)
	wantOnly(t, r, MovedWithoutRedis, 1)
	if r.MovedWithoutRedis != 3 || len(r.RedisHandOvers) != 1 || r.RedisHandOvers[0] != 4*time.Second || r.RedisNoHandOver != 1 {
		t.Fatalf("want 3 moved, one hand-over of 4s and one cut without; have %d, %v, %d", r.MovedWithoutRedis, r.RedisHandOvers, r.RedisNoHandOver)
	}
	in.Faults[0].Moved = 0
	if r := Check(in); !r.OK() {
		t.Fatalf("nothing moved: want no violation, have %v", r.ViolationCounts)
	}
}

// A failover's new master missing acknowledged messages: each is a
// never-replicated violation, whether it ran (before the failover) or not;
// one that never ran is lost, counted as never replicated and not again
// as another loss; a loss the failover does not explain stays a loss.
func TestNeverReplicatedIsSplitFromOtherLosses(t *testing.T) {
	in := clean()
	in.Executions = in.Executions[2:] // m-0 and m-1 never ran
	in.Faults = []Fault{{Kind: Sentinel, Target: "redis", Start: at(-5000), End: at(-4000),
		NotReplicated: []string{"o/m-0", "o/m-2"}, Checked: 40}}
	r := Check(in)
	if r.NeverReplicated != 2 || r.LostNeverReplicated != 1 || r.Lost != 2 || r.FailoverChecked != 40 {
		t.Fatalf("want 2 never replicated (m-0 lost, m-2 ran), 2 lost of which 1 never replicated, 40 looked for; have %d, %d, %d, %d",
			r.NeverReplicated, r.LostNeverReplicated, r.Lost, r.FailoverChecked)
	}
	if r.ViolationCounts[NeverReplicated] != 2 || r.ViolationCounts[Lost] != 1 || len(r.ViolationCounts) != 2 {
		t.Fatalf("want 2 never-replicated and 1 lost (m-1) violations, have %v", r.ViolationCounts)
	}
	var buf bytes.Buffer
	r.Markdown(&buf, Run{})
	if !strings.Contains(buf.String(), "| 1 / 1 |") || !strings.Contains(buf.String(), "| 40 / 2 |") {
		t.Fatalf("want the report to split the losses (1 never replicated / 1 other) and show 40 looked for, 2 missing:\n%s", buf.String())
	}
}

// A message run at two positions, the first assigned by the old master
// during a Sentinel failover and the second after it began, is counted as
// re-enqueued across the failover, not as a double enqueue; the same
// outside any failover is still a violation.
// An observed failover (Sentinel's own) counts as an injected one does.
func TestReenqueueAcrossAFailoverIsCountedNotViolated(t *testing.T) {
	for _, k := range []Kind{Sentinel, Failover} {
		t.Run(string(k), func(t *testing.T) { testReenqueueAcrossAFailover(t, k) })
	}
}

func testReenqueueAcrossAFailover(t *testing.T, kind Kind) {
	in := clean()
	start := t0.Add(10 * time.Second)
	in.Faults = []Fault{{Kind: kind, Target: "redis", Start: start, End: start.Add(15 * time.Second)}}
	first, second := start.Add(500*time.Millisecond).UnixMicro(), start.Add(3*time.Second).UnixMicro()
	m := in.Enqueued[3] // queue u
	in.Executions = append(in.Executions,
		Execution{Queue: m.Queue, ID: "again", Position: first, WorkerPID: 10, PID: 3000, Start: start.Add(time.Second), End: start.Add(time.Second + 10*time.Millisecond)},
		Execution{Queue: m.Queue, ID: "again", Position: second, WorkerPID: 10, PID: 3001, Start: start.Add(4 * time.Second), End: start.Add(4*time.Second + 10*time.Millisecond)})
	in.Enqueued = append(in.Enqueued, Enqueued{Queue: m.Queue, ID: "again", Position: second})
	in.FinalOffsets["u"] = second
	r := Check(in)
	if !r.OK() || r.FailoverReenqueues != 1 {
		t.Fatalf("want the re-enqueue counted (1) and no violation, have %d and %v", r.FailoverReenqueues, r.Violations)
	}
	in.Faults = nil
	r = Check(in)
	if r.ViolationCounts[DoubleEnqueue] != 1 || r.FailoverReenqueues != 0 {
		t.Fatalf("without the failover: want a double-enqueue violation, have %v (re-enqueues %d)", r.ViolationCounts, r.FailoverReenqueues)
	}
}

// A message repeated after a failover Sentinel made on its own (observed,
// not injected) is excused as at any fault that loses Redis writes, and
// counted against it; the report lists the observed failovers.
func TestObservedFailoverExcusesARepeat(t *testing.T) {
	in := clean()
	m := in.Executions[3]
	again := m
	again.WorkerPID, again.Start, again.End = 11, at(4500), at(4550)
	in.Executions = append(in.Executions, again)
	in.Faults = []Fault{{Kind: Failover, Target: "redis 127.0.0.1:7001", Start: at(350), End: at(2500)}}
	r := Check(in)
	if !r.OK() || r.DuplicatesAt[Failover] != 1 || r.Faults[Failover] != 1 {
		t.Fatalf("want the repeat excused by the failover, have %v (excused %v, faults %v)", r.Violations, r.DuplicatesAt, r.Faults)
	}
	var md bytes.Buffer
	r.Markdown(&md, Run{})
	if !strings.Contains(md.String(), "| failover (observed, not injected) | 1 | 1 |") {
		t.Errorf("want the observed failover in the fault table, have:\n%s", md.String())
	}
}
