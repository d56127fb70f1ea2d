package coordinator

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// Issue 40: Remove takes retired queues out of their owners' shares by
// rewriting only the chunks that held them, those shares' headers and
// /assignment; a member's share reads right afterwards, and an Update
// that removes and places at once is one multi. Fails on the writer that
// had only Write (the whole share set rewritten) for a removal.
func TestRemoveRewritesOnlyTheChunksThatHeldTheQueues(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	leader, member := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	w, lead := leaderWriter(t, leader, "a")
	target := spread(30000, "a", "b") // 15,000 a share: two hashed chunks each
	for i := range 100 {
		target[fmt.Sprintf("c%03d", i)] = "c"
	}
	if _, err := w.Write(ctx, drover.Assignment{Leader: "a", Queues: target}); err != nil {
		t.Fatal(err)
	}
	full := w.LastWrite()
	gens := func(m string) []int64 {
		data, _, err := member.conn.Get(member.sharePath(m))
		if err != nil {
			t.Fatal(err)
		}
		var h shareHeader
		if err := json.Unmarshal(data, &h); err != nil {
			t.Fatal(err)
		}
		return h.Chunks
	}
	before := map[string][]int64{"a": gens("a"), "b": gens("b"), "c": gens("c")}
	if len(before["b"]) < 2 {
		t.Fatalf("setup: want shares of several hashed chunks, have %d", len(before["b"]))
	}
	shareB := member.Assignments().WatchShare(ctx, "b")
	until(t, shareB, "b's share", func(an AssignmentNode) bool { return an.Assignment.Generation == 1 })

	// Three of b's queues and one of a's retire; c's share is untouched.
	var gone []string
	wantChunks := map[string]map[int]bool{"a": {}, "b": {}}
	for _, q := range sortedKeys(target) {
		m := target[q]
		if (m == "b" && len(gone) < 3) || (m == "a" && len(gone) == 3) {
			gone = append(gone, q)
			wantChunks[m][chunkOf(q, len(before[m]))] = true
		}
	}
	a, err := w.Remove(ctx, append(slices.Clone(gone), "never-assigned"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range gone {
		delete(target, q)
	}
	if a.Generation != 2 || !maps.Equal(w.Current().Queues, target) {
		t.Fatalf("remove: generation %d, %d queues; want 2, %d", a.Generation, len(w.Current().Queues), len(target))
	}
	st := w.LastWrite()
	chunks := len(wantChunks["a"]) + len(wantChunks["b"])
	// The epoch check, the chunks that held the queues (2 of the 5), two
	// share headers, /assignment.
	if st.Multis != 1 || st.Ops != 1+chunks+2+1 || st.Bytes*10 > full.Bytes*6 {
		t.Fatalf("removing 4 queues: want 1 multi of %d ops and at most 60%% of the %d bytes of the whole write, have %+v", 4+chunks, full.Bytes, st)
	}
	for m, want := range wantChunks {
		after := gens(m)
		for i := range after {
			if rewritten := after[i] != before[m][i]; rewritten != want[i] {
				t.Fatalf("%s's chunk %d: rewritten %v, want %v (chunks %v → %v)", m, i, rewritten, want[i], before[m], after)
			}
		}
	}
	if !slices.Equal(gens("c"), before["c"]) {
		t.Fatalf("c's share was rewritten: %v → %v", before["c"], gens("c"))
	}
	got := until(t, shareB, "b's share after the removal", func(an AssignmentNode) bool { return an.Assignment.Generation == a.Generation })
	if have, want := sortedKeys(got.ShareQueues("b")), shareOf(target, "b"); !slices.Equal(have, want) {
		t.Fatalf("b's share after the removal: want %d queues, have %d", len(want), len(have))
	}

	// Removing nothing assigned writes nothing.
	if a2, err := w.Remove(ctx, []string{"never-assigned"}); err != nil || a2.Generation != a.Generation {
		t.Fatalf("removing an unassigned queue: want generation %d unchanged, have %d (%v)", a.Generation, a2.Generation, err)
	}
	// Placing and removing at once is one multi; the placed queue lands in
	// an appended chunk, the removed one leaves its hashed chunk.
	var out string
	for q, m := range target {
		if m == "b" {
			out = q
			break
		}
	}
	a3, err := w.Update(ctx, map[string]string{"new-1": "b", "new-2": "c"}, []string{out})
	if err != nil {
		t.Fatal(err)
	}
	delete(target, out)
	target["new-1"], target["new-2"] = "b", "c"
	if st := w.LastWrite(); st.Multis != 1 || st.Ops != 1+3+2+1 {
		t.Fatalf("update of b (a removal and a placement) and c (a placement): want 1 multi of 7 ops, have %+v", st)
	}
	got = until(t, shareB, "b's share after the update", func(an AssignmentNode) bool { return an.Assignment.Generation == a3.Generation })
	if have, want := sortedKeys(got.ShareQueues("b")), shareOf(target, "b"); !slices.Equal(have, want) {
		t.Fatalf("b's share after the update: want %d queues, have %d", len(want), len(have))
	}
	if _, err := w.Update(ctx, map[string]string{"new-3": "b"}, []string{"new-3"}); err == nil {
		t.Fatal("placed and removed the same queue at once")
	}

	// A new leader reads the result back.
	lead.Resign(ctx)
	w2, _ := leaderWriter(t, member, "b")
	if !maps.Equal(w2.Current().Queues, target) {
		t.Fatalf("a new leader reads %d queues, want %d", len(w2.Current().Queues), len(target))
	}
	whole, err := member.Assignments().Read(ctx)
	if err != nil || !maps.Equal(whole.Assignment.Queues, target) {
		t.Fatalf("whole assignment: %d queues (%v), want %d", len(whole.Assignment.Queues), err, len(target))
	}
}
