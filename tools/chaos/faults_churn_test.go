package main

import (
	"testing"
	"time"
)

// A redis-cut-all counts moves of queues that exist before and after the
// cut; the key-churn family registers and retires keys all the time, which
// is not a move (before this, a key placed during a cut counted as moved
// and the settle before a cut never saw a still assignment).
func TestOwnerChangesCountOnlyMoves(t *testing.T) {
	before := map[string]string{"q00": "w1", "q01": "w2", "c-k00": "w3", "c-k01": "w1"}
	after := map[string]string{"q00": "w1", "q01": "w3", "c-k00": "w3", "c-k02": "w2"} // q01 moved, c-k01 retired, c-k02 new
	if n := ownerChanges(before, after); n != 1 {
		t.Errorf("want 1 move (q01), have %d", n)
	}
	if n := ownerChanges(after, after); n != 0 {
		t.Errorf("an unchanged assignment: want 0 moves, have %d", n)
	}
}

// A cut of every worker from Redis counts as moved what changed owner
// after the window in which no leader could see the cut; a correction
// written within it (decided before the cut) is excused, and a queue moved
// in the window and again after it counts.
func TestACutAllExcusesOnlyMovesDecidedBeforeItCouldBeSeen(t *testing.T) {
	before := map[string]string{"a": "w1", "b": "w1", "c": "w2"}
	early := map[string]string{"a": "w2", "b": "w1", "c": "w3"} // a correction moved a and c
	after := map[string]string{"a": "w2", "b": "w3", "c": "w1"} // then b and c moved in the cut
	moved, excused := cutAllMoves(before, early, after)
	if moved != 2 || excused != 2 {
		t.Errorf("want 2 moved (b, c) and 2 excused (a, c), have %d and %d", moved, excused)
	}
	if got := cutUnseen(4 * time.Second); got != 2600*time.Millisecond {
		t.Errorf("at a 4 s session timeout (give-up 4 s, ping interval 0.8 s): want 2.6 s unseen, have %s", got)
	}
}
