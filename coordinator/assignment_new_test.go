package coordinator

import (
	"maps"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// A fleet's first assignment marks its chunks New, so that members claim
// without reading every offset first; a later whole write marks New only
// a chunk none of whose queues the assignment before held.
func TestWholeWriteMarksChunksOfUnassignedQueuesNew(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	leader := connect(t, server.Addrs, root)
	ctx := ctxT(t)
	w, _ := leaderWriter(t, leader, "a")
	first := spread(20, "a", "b")
	if _, err := w.Write(ctx, drover.Assignment{Leader: "a", Queues: first}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"a", "b"} {
		an, err := readShareOnce(t, leader, m)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range an.Share {
			if !c.New {
				t.Fatalf("first assignment: %s's chunk %d of %v: want New, have not", m, i, c.Queues)
			}
		}
	}
	// One queue moves from a to b: both shares are rewritten, and every
	// queue in them was assigned before.
	next := maps.Clone(first)
	next["q00000"] = "b"
	if _, err := w.Write(ctx, drover.Assignment{Leader: "a", Queues: next}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"a", "b"} {
		an, err := readShareOnce(t, leader, m)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range an.Share {
			if c.Generation == 2 && c.New {
				t.Fatalf("after a move: %s's chunk %d of %v was rewritten New, though its queues were assigned before", m, i, c.Queues)
			}
		}
	}
	// Queues never assigned before, alone on a new member: New. (A copy:
	// the writer keeps the map it wrote.)
	next = maps.Clone(next)
	next["z-1"], next["z-2"] = "c", "c"
	if _, err := w.Write(ctx, drover.Assignment{Leader: "a", Queues: next}); err != nil {
		t.Fatal(err)
	}
	an, err := readShareOnce(t, leader, "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(an.Share) == 0 || !an.Share[0].New {
		t.Fatalf("new member's share of new queues: want a New chunk, have %+v", an.Share)
	}
}
