package coordinator

import (
	"fmt"
	"maps"
	"testing"
	"time"
	"unsafe"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// Watch reads only the chunks whose generation changed and builds each map
// from the one it delivered before; every delivery must still equal the
// whole assignment read afresh: after a whole write, moves to a joiner and
// off a leaver, placements and removals, and a whole write folding the
// moved chunks. The delivered maps are the reader's: a later delivery must
// not change one delivered before.
func TestWatchDeliversTheWholeAssignmentAfterEachWrite(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	leader, observer := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	w, _ := leaderWriter(t, leader, "a")
	ch := observer.Assignments().Watch(ctx)
	var delivered []map[string]string
	var copies []map[string]string
	check := func(step string, a drover.Assignment, want map[string]string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case an, ok := <-ch:
				if !ok {
					t.Fatalf("%s: the watch ended", step)
				}
				if an.Err != nil {
					t.Fatalf("%s: %v", step, an.Err)
				}
				if an.Assignment.Generation != a.Generation {
					continue
				}
				read, err := observer.Assignments().Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !maps.Equal(an.Assignment.Queues, want) || !maps.Equal(read.Assignment.Queues, want) {
					t.Fatalf("%s: watch delivered %d queues, read %d, want %d (equal: %v, %v)", step,
						len(an.Assignment.Queues), len(read.Assignment.Queues), len(want),
						maps.Equal(an.Assignment.Queues, want), maps.Equal(read.Assignment.Queues, want))
				}
				if an.Assignment.Leader != read.Assignment.Leader || an.Assignment.Strategy != read.Assignment.Strategy {
					t.Fatalf("%s: watch says leader %q strategy %q, read %q %q", step, an.Assignment.Leader, an.Assignment.Strategy, read.Assignment.Leader, read.Assignment.Strategy)
				}
				for i, d := range delivered {
					if !maps.Equal(d, copies[i]) {
						t.Fatalf("%s: the map delivered at step %d changed after it was delivered", step, i)
					}
				}
				delivered = append(delivered, an.Assignment.Queues)
				copies = append(copies, maps.Clone(an.Assignment.Queues))
				return
			case <-deadline:
				t.Fatalf("%s: generation %d not delivered", step, a.Generation)
			}
		}
	}

	target := spread(30000, "a", "b", "c")
	a, err := w.Write(ctx, drover.Assignment{Leader: "a", Queues: target})
	if err != nil {
		t.Fatal(err)
	}
	check("whole write", a, target)

	// d joins: 100 of a's and 100 of b's queues move to it.
	moved := map[string]string{}
	for _, from := range []string{"a", "b"} {
		for _, q := range shareOf(target, from)[:100] {
			moved[q] = "d"
		}
	}
	if a, err = w.Move(ctx, moved); err != nil {
		t.Fatal(err)
	}
	maps.Copy(target, moved)
	check("move to a joiner", a, target)

	// c leaves: its queues go to a and d.
	moved = map[string]string{}
	for i, q := range shareOf(target, "c") {
		moved[q] = []string{"a", "d"}[i%2]
	}
	if a, err = w.Move(ctx, moved); err != nil {
		t.Fatal(err)
	}
	maps.Copy(target, moved)
	check("move off a leaver", a, target)

	// New queues placed, some removed.
	placed := map[string]string{}
	for i := range 50 {
		placed[fmt.Sprintf("n%03d", i)] = []string{"a", "b", "d"}[i%3]
	}
	removed := shareOf(target, "b")[:40]
	if a, err = w.Update(ctx, placed, removed); err != nil {
		t.Fatal(err)
	}
	maps.Copy(target, placed)
	for _, q := range removed {
		delete(target, q)
	}
	check("placements and removals", a, target)

	// A whole write folds the moved chunks back.
	if a, err = w.Write(ctx, drover.Assignment{Leader: "a", Queues: target}); err != nil {
		t.Fatal(err)
	}
	check("whole write folding", a, target)
}

// TestWatchKeepsEachMembersNameString: a queue that stays with its member
// across two whole writes is delivered with the very string the map before
// held, so an observer's diff of a million queues compares pointers (the
// bench's observer at a join). Member names of more than one byte: Go
// shares one-byte strings whatever made them.
func TestWatchKeepsEachMembersNameString(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	leader, observer := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	w, _ := leaderWriter(t, leader, "member-a")
	ch := observer.Assignments().Watch(ctx)
	next := func(gen int64) map[string]string {
		t.Helper()
		for an := range ch {
			if an.Err != nil {
				t.Fatal(an.Err)
			}
			if an.Assignment.Generation == gen {
				return an.Assignment.Queues
			}
		}
		t.Fatalf("the watch ended before generation %d", gen)
		return nil
	}
	target := spread(3000, "member-a", "member-b", "member-c")
	a, err := w.Write(ctx, drover.Assignment{Leader: "member-a", Queues: target})
	if err != nil {
		t.Fatal(err)
	}
	first := next(a.Generation)
	// A whole write that moves a third of member-c's queues to a joiner:
	// every share is written again, so the watch assembles afresh.
	second := maps.Clone(target)
	moved := 0
	for q, m := range second {
		if m == "member-c" && moved < 333 {
			second[q] = "member-d"
			moved++
		}
	}
	b, err := w.Write(ctx, drover.Assignment{Leader: "member-a", Queues: second})
	if err != nil {
		t.Fatal(err)
	}
	got := next(b.Generation)
	if !maps.Equal(got, second) {
		t.Fatalf("delivered %d queues, want the %d written", len(got), len(second))
	}
	same := 0
	for q, m := range got {
		if pm := first[q]; pm == m {
			same++
			if unsafe.StringData(pm) != unsafe.StringData(m) {
				t.Fatalf("queue %s of %s holds a new copy of its member's name", q, m)
			}
		}
	}
	if same != 3000-moved {
		t.Fatalf("%d queues stayed, want %d", same, 3000-moved)
	}
}
