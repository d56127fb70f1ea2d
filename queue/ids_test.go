package queue

import (
	"strings"
	"testing"
	"time"
)

// The ULID spec's example: time 1469918176385 encodes as 01ARYZ6S41.
func TestEncodeULIDMatchesSpec(t *testing.T) {
	got := encodeULID(1469918176385, 0, 0)
	if want := "01ARYZ6S41" + strings.Repeat("0", 16); got != want {
		t.Fatalf("want %s, have %s", want, got)
	}
	if got := encodeULID(maxULIDTime, 0xffff, ^uint64(0)); got != "7ZZZZZZZZZZZZZZZZZZZZZZZZZ" {
		t.Fatalf("largest ULID: want 7ZZZZZZZZZZZZZZZZZZZZZZZZZ, have %s", got)
	}
}

// Ids increase strictly: within one millisecond, across milliseconds, and
// when the clock steps back.
func TestIDsAreMonotonic(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	g := idSource{now: func() time.Time { return now }}
	var last string
	steps := []time.Duration{0, 0, 0, time.Millisecond, 0, -time.Hour, 0, time.Hour}
	for i, step := range steps {
		now = now.Add(step)
		id, err := g.next()
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		if len(id) != 26 || strings.Trim(id, crockford) != "" {
			t.Fatalf("id %q: want 26 Crockford base32 characters", id)
		}
		if id <= last {
			t.Fatalf("step %d (%s): id %s does not follow %s", i, step, id, last)
		}
		last = id
	}
	if !strings.HasPrefix(last, encodeULID(uint64(now.UnixMilli()), 0, 0)[:10]) {
		t.Fatalf("after the clock moved forward: id %s should carry the new time", last)
	}
}

// The random part carries into the next millisecond instead of wrapping.
func TestIDOverflowBorrowsTheNextMillisecond(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	g := idSource{now: func() time.Time { return now }, lastMs: uint64(now.UnixMilli()), hi: 0xffff, lo: ^uint64(0)}
	prev := encodeULID(g.lastMs, g.hi, g.lo)
	id, err := g.next()
	if err != nil {
		t.Fatalf("next: %v", err)
	}
	if id <= prev {
		t.Fatalf("after overflow: id %s does not follow %s", id, prev)
	}
}
