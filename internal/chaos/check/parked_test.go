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
