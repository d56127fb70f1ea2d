package main

import "testing"

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
