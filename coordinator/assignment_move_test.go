package coordinator

import (
	"fmt"
	"maps"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// Move writes a change of members as what moves: a member that joins gets
// a share created with the queues moved to it (not marked New: they were
// claimed before), each donor rewrites the chunks that held them, a member
// that leaves is emptied; a share neither giving nor taking is not written,
// members read the result like any share, a new leader reads it back, and
// the next Write folds the moved chunks.
func TestMoveWritesWhatMoves(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	leader, member := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	w, lead := leaderWriter(t, leader, "a")
	target := spread(30000, "a", "b", "c") // 10,000 a share
	if _, err := w.Write(ctx, drover.Assignment{Leader: "a", Queues: target}); err != nil {
		t.Fatal(err)
	}
	version := func(m string) int32 {
		_, st, err := member.conn.Get(member.sharePath(m))
		if err != nil {
			t.Fatal(err)
		}
		return st.Version
	}
	cVersion := version("c")

	// d joins: 100 of a's and 100 of b's queues move to it.
	moved := map[string]string{}
	for _, from := range []string{"a", "b"} {
		for _, q := range shareOf(target, from)[:100] {
			moved[q] = "d"
		}
	}
	a, err := w.Move(ctx, moved)
	if err != nil {
		t.Fatalf("move to a joiner: %v", err)
	}
	maps.Copy(target, moved)
	if !maps.Equal(w.Current().Queues, target) || a.Generation != 2 {
		t.Fatalf("after the move: generation %d, %d queues; want 2 and the target", a.Generation, len(w.Current().Queues))
	}
	if v := version("c"); v != cVersion {
		t.Fatalf("c's share, which neither gave nor took, was written (version %d → %d)", cVersion, v)
	}
	d, err := readShareOnce(t, member, "d")
	if err != nil {
		t.Fatal(err)
	}
	if have, want := sortedKeys(d.ShareQueues("d")), shareOf(target, "d"); fmt.Sprint(have) != fmt.Sprint(want) {
		t.Fatalf("d's share: want %d queues, have %d", len(want), len(have))
	}
	for _, c := range d.Share {
		if c.New {
			t.Fatal("a chunk of moved queues is marked New: its member would claim them as never claimed")
		}
	}
	for _, m := range []string{"a", "b", "c"} {
		got, err := readShareOnce(t, member, m)
		if err != nil {
			t.Fatal(err)
		}
		if have, want := sortedKeys(got.ShareQueues(m)), shareOf(target, m); fmt.Sprint(have) != fmt.Sprint(want) {
			t.Fatalf("%s's share after the move: want %d queues, have %d", m, len(want), len(have))
		}
	}

	// c leaves: its queues go to a and d; its share is emptied.
	moved = map[string]string{}
	for i, q := range shareOf(target, "c") {
		moved[q] = []string{"a", "d"}[i%2]
	}
	if _, err := w.Move(ctx, moved); err != nil {
		t.Fatalf("move from a leaver: %v", err)
	}
	maps.Copy(target, moved)
	c, err := readShareOnce(t, member, "c")
	if err != nil || len(c.ShareQueues("c")) != 0 {
		t.Fatalf("c's share after it left: %d queues (%v), want none", len(c.ShareQueues("c")), err)
	}
	if _, err := w.Move(ctx, map[string]string{"nope": "a"}); err == nil {
		t.Fatal("moved a queue that is not assigned")
	}

	// A new leader reads the moved chunks back, and its whole write folds them.
	lead.Resign(ctx)
	w2, _ := leaderWriter(t, member, "b")
	if !maps.Equal(w2.Current().Queues, target) {
		t.Fatalf("a new leader reads %d queues, want %d", len(w2.Current().Queues), len(target))
	}
	if _, err := w2.Write(ctx, drover.Assignment{Leader: "b", Queues: target}); err != nil {
		t.Fatal(err)
	}
	whole, err := member.Assignments().Read(ctx)
	if err != nil || !maps.Equal(whole.Assignment.Queues, target) {
		t.Fatalf("whole assignment after the fold: %d queues (%v), want %d", len(whole.Assignment.Queues), err, len(target))
	}
}
