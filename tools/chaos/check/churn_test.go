package check

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A key of a retiring family that ran and was retired has no offset node
// after the drain: its final offset is not expected, yet its messages are
// checked like any other (a lost one is still lost).
func TestRetiredKeysNeedNoFinalOffsetButKeepTheirChecks(t *testing.T) {
	withKey := func() Input {
		in := clean()
		in.Ordered["c-k00"] = true
		for i, id := range []string{"c-1", "c-2"} {
			pos := int64(500 + i)
			in.Enqueued = append(in.Enqueued, Enqueued{Queue: "c-k00", ID: id, Position: pos})
			in.Executions = append(in.Executions, Execution{Queue: "c-k00", ID: id, Position: pos, WorkerPID: 10, PID: 3000 + i,
				Start: at(5000 + 100*i), End: at(5000 + 100*i + 50)})
		}
		return in
	}

	in := withKey() // no final offset for c-k00, and not said to be retired
	wantOnly(t, Check(in), OffsetBehind, 1)

	in = withKey()
	in.Retired = map[string]bool{"c-k00": true}
	in.KeyChurn = &ChurnSummary{Keys: 1, Retirements: 3, Returns: 3, Bursts: 1, RetiredAtEnd: 1}
	r := Check(in)
	if !r.OK() {
		t.Errorf("a retired key needs no final offset: want no violation, have %v", r.Violations)
	}
	var md bytes.Buffer
	r.Markdown(&md, Run{})
	if !strings.Contains(md.String(), "| key-churn: family keys fed / retirements seen / keys enqueued to again after one / bursts of new keys / retired at the end | 1 / 3 / 3 / 1 / 1 |") {
		t.Errorf("the report lacks the key churn line:\n%s", md.String())
	}

	in = withKey()
	in.Retired = map[string]bool{"c-k00": true}
	in.Executions = in.Executions[:len(in.Executions)-1] // c-2 never ran
	wantOnly(t, Check(in), Lost, 1)

	in = withKey()
	in.Retired = map[string]bool{"c-k00": true}
	in.Executions[len(in.Executions)-1].Start = at(5020) // c-2 started while c-1 ran
	wantOnly(t, Check(in), OrderedOverlap, 1)
}

// A run killed with no fault around it (a planned move's drain timeout) is
// counted, not excused and not a violation; one killed inside a fault's
// window is not counted.
func TestKillsOutsideFaultsAreCounted(t *testing.T) {
	in := clean()
	in.Executions = append(in.Executions,
		Execution{Queue: "u", ID: "m-3", Position: 104, WorkerPID: 10, PID: 4000, Start: at(8000), End: at(13000), Killed: true},
		Execution{Queue: "u", ID: "m-4", Position: 105, WorkerPID: 11, PID: 4001, Start: at(20000), End: at(21000), Killed: true},
	)
	in.Faults = []Fault{{Kind: WorkerKill, Target: "w2", PIDs: []int{11}, Start: at(21000), End: at(21100)}}
	r := Check(in)
	if !r.OK() {
		t.Errorf("want no violation, have %v", r.Violations)
	}
	if r.KilledOutsideFaults != 1 || len(r.KilledOutsideFaultExamples) != 1 || !strings.Contains(r.KilledOutsideFaultExamples[0], "u/m-3") {
		t.Errorf("want the one kill outside a fault (u/m-3) counted, have %d: %v", r.KilledOutsideFaults, r.KilledOutsideFaultExamples)
	}
}

func TestStartLinesRoundTrip(t *testing.T) {
	e := Execution{Queue: "c-busy-001", ID: "b001-000002", Attempt: 1, Position: 1700000000000001, WorkerPID: 41, PID: 4242, Start: time.UnixMicro(at(1500).UnixMicro())}
	line := FormatStart(e)
	have, err := ParseStart(strings.TrimSuffix(line, "\n"))
	if err != nil || have != e {
		t.Fatalf("start line %q: want %+v back, have %+v (err %v)", line, e, have, err)
	}
	if _, err := ParseStart("c-busy-001 b001 1 2 3 4 5"); err == nil {
		t.Error("a line without the start prefix must be refused")
	}
}
