package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
)

func TestOffsetsShowAndReset(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "o", "--retention", "1h")
	st := c.store()
	ctx := context.Background()
	var positions []drover.Position
	for i := 0; i < 3; i++ {
		res, err := st.Producer().Enqueue(ctx, &drover.Message{Queue: "o", Task: "t"})
		if err != nil {
			t.Fatal(err)
		}
		positions = append(positions, res.Position)
	}
	var offs []offsetReport
	c.okJSON(&offs, "ctl", "offsets", "show", "o")
	if len(offs) != 1 || offs[0].Position != 0 || offs[0].Lag != 3 || offs[0].Last != positions[2] || offs[0].Retention != "1h0m0s" {
		t.Fatalf("want offset 0, lag 3, log end %d, retention 1h; have %+v", positions[2], offs)
	}

	reset := func(args ...string) offsetReport {
		t.Helper()
		var out map[string]any
		c.okJSON(&out, append([]string{"ctl", "offsets", "reset", "o"}, args...)...)
		var now []offsetReport
		c.okJSON(&now, "ctl", "offsets", "show", "o")
		return now[0]
	}
	if r := reset("--to-latest"); r.Position != positions[2] || r.Lag != 0 {
		t.Fatalf("--to-latest: want position %d lag 0, have %+v", positions[2], r)
	}
	if r := reset("--to-earliest"); r.Position != positions[0]-1 || r.Lag != 3 {
		t.Fatalf("--to-earliest: want position %d lag 3, have %+v", positions[0]-1, r)
	}
	between := time.UnixMicro(int64(positions[1])).UTC().Format(time.RFC3339Nano)
	if r := reset("--to-datetime", between); r.Position != positions[0] || r.Lag != 2 {
		t.Fatalf("--to-datetime %s: want position %d (replaying the last two), have %+v", between, positions[0], r)
	}
	if r := reset("--to-position", "0"); r.Position != 0 || r.Lag != 3 {
		t.Fatalf("--to-position 0: want lag 3, have %+v", r)
	}
	var dry map[string]any
	c.okJSON(&dry, "ctl", "offsets", "reset", "o", "--to-latest", "--dry-run")
	if r := reset("--to-position", "0", "--dry-run"); r.Position != 0 {
		t.Fatalf("--dry-run changed the offset: %+v", r)
	}

	// Owned: refused unless paused; a reset of a paused queue fences the owner.
	s := c.session()
	claim, err := s.Claims().Claim(ctx, "o", coordinator.Owner{Member: "w-test", Generation: 1})
	if err != nil {
		t.Fatal(err)
	}
	c.fails(exitRefused, []string{"owned by member w-test and not paused", "drover ctl pause --queue o"}, "ctl", "offsets", "reset", "o", "--to-latest")
	c.ok("ctl", "pause", "--queue", "o")
	c.ok("ctl", "offsets", "reset", "o", "--to-latest")
	if err := claim.Commit(ctx, drover.Offset{Position: 1}); !errors.Is(err, drover.ErrFenced) {
		t.Fatalf("want the owner's next commit fenced after the reset, have %v", err)
	}

	c.fails(exitUsage, []string{"exactly one of"}, "ctl", "offsets", "reset", "o")
	c.fails(exitUsage, []string{"exactly one of"}, "ctl", "offsets", "reset", "o", "--to-latest", "--to-earliest")
	c.fails(exitUsage, []string{"--to-datetime: want RFC 3339"}, "ctl", "offsets", "reset", "o", "--to-datetime", "yesterday")
	c.fails(exitUsage, []string{"--to-position"}, "ctl", "offsets", "reset", "o", "--to-position", "-4")
	c.fails(exitNotFound, []string{"queue not found"}, "ctl", "offsets", "reset", "nosuch", "--to-latest")
	c.fails(exitNotFound, []string{"queue not found"}, "ctl", "offsets", "show", "nosuch")
}
