package check

import "testing"

// The ordered queue "o" of the clean run runs m-0 (position 101) at 0–50
// ms, m-1 at 100 ms, m-2 at 200 ms.
func parkedAtM0(resolved int, how string) Input {
	in := clean()
	p := Park{Queue: "o", HeadID: "m-0", HeadPosition: 101, ParkedAt: at(60), How: how}
	if how != "" {
		p.ResolvedAt = at(resolved)
	}
	in.Parks = []Park{p}
	return in
}

func TestParkResolvedBeforeTheNextStartPasses(t *testing.T) {
	r := Check(parkedAtM0(90, "retry"))
	if !r.OK() || r.Parks != 1 || r.ParksUnresolved != 0 {
		t.Fatalf("want a clean run with 1 park, have parks %d (unresolved %d), violations %v", r.Parks, r.ParksUnresolved, r.Violations)
	}
}

func TestPlantedStartBehindAParkedHeadIsReported(t *testing.T) {
	wantOnly(t, Check(parkedAtM0(180, "skip")), ParkedAhead, 1) // m-1 started at 100 ms
}

func TestStartsBehindAnUnresolvedParkAreReported(t *testing.T) {
	r := Check(parkedAtM0(0, ""))
	wantOnly(t, r, ParkedAhead, 2) // m-1 and m-2
	if r.ParksUnresolved != 1 {
		t.Fatalf("unresolved parks: want 1, have %d", r.ParksUnresolved)
	}
}

// A park whose resolution the harness never recorded (its retry's answer
// lost to a fault) is resolved at the head's first logged run after the
// park: only the retry's edited args make a failing head run. A start
// behind the head before that run is still reported.
func TestParkResolvedByASeenRunOfItsHead(t *testing.T) {
	in := parkedAtM0(0, "")
	for i, e := range in.Executions {
		if e.Queue == "o" && e.ID == "m-0" {
			in.Executions[i].Start, in.Executions[i].End = at(170), at(180)
		}
	}
	r := Check(in)
	wantOnly(t, r, ParkedAhead, 1) // m-1 at 100 ms; m-2 at 200 ms is after the head ran
	if r.ParksUnresolved != 0 {
		t.Fatalf("unresolved parks: want 0, have %d", r.ParksUnresolved)
	}
}

// The harness notes a retry when its call returns, after the retry took
// effect: the head runs again first, and what runs behind it from then on
// is no violation even before the noted resolution (seen in a run: the
// next message started 51 ms before the harness's retry returned, 13 ms
// after the head's run). A start before the head's run still is.
func TestParkEndsWhenItsHeadRunsAgain(t *testing.T) {
	in := parkedAtM0(250, "retry")
	for i, e := range in.Executions {
		if e.Queue == "o" && e.ID == "m-0" {
			in.Executions[i].Start, in.Executions[i].End = at(150), at(160)
		}
	}
	wantOnly(t, Check(in), ParkedAhead, 1) // m-1 at 100 ms; m-2 at 200 ms ran after the head
}
