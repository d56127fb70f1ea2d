package coordinator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// leaderWriter campaigns on s as name and returns its assignment writer.
func leaderWriter(t *testing.T, s *Session, name string) (*AssignmentWriter, *Leadership) {
	t.Helper()
	ctx := ctxT(t)
	el, err := s.Group().Election(ElectionRebalance)
	if err != nil {
		t.Fatal(err)
	}
	lead, err := el.Campaign(ctx, name)
	if err != nil {
		t.Fatalf("campaign %s: %v", name, err)
	}
	w, err := s.Assignments().NewWriter(ctx, lead)
	if err != nil {
		t.Fatalf("writer %s: %v", name, err)
	}
	return w, lead
}

// spread assigns n queues round-robin to members.
func spread(n int, members ...string) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("q%05d", i)] = members[i%len(members)]
	}
	return out
}

// shareOf returns the queues of one member in a, sorted.
func shareOf(a map[string]string, member string) []string {
	var qs []string
	for q, m := range a {
		if m == member {
			qs = append(qs, q)
		}
	}
	sort.Strings(qs)
	return qs
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// readShareOnce reads member's share with a fresh reader (no cache).
func readShareOnce(t *testing.T, s *Session, member string) (AssignmentNode, error) {
	t.Helper()
	ws := newWatchSet(s.hub)
	defer ws.close()
	r := &shareReader{s: s, member: member, chunks: map[int]ShareChunk{}}
	return r.refresh(ctxT(t), ws)
}

// A member reads only its own share, and a rebalance writes only the chunks
// and share headers of the members whose share changed.
func TestShareWritesGrowWithTheQueuesMoved(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	leader, member := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	w, _ := leaderWriter(t, leader, "a")

	target := spread(3000, "a", "b", "c")
	if _, err := w.Write(ctx, drover.Assignment{Leader: "a", Queues: target}); err != nil {
		t.Fatalf("write generation 1: %v", err)
	}
	shareB := member.Assignments().WatchShare(ctx, "b")
	got := until(t, shareB, "b's share at generation 1", func(an AssignmentNode) bool { return an.Assignment.Generation == 1 })
	if have, want := sortedKeys(got.ShareQueues("b")), shareOf(target, "b"); fmt.Sprint(have) != fmt.Sprint(want) {
		t.Fatalf("b's share: want %d queues, have %d", len(want), len(have))
	}
	_, stC, err := member.conn.Get(member.sharePath("c"))
	if err != nil {
		t.Fatal(err)
	}

	// Move one queue from a to b: c's share is not written at all.
	moved := shareOf(target, "a")[0]
	target[moved] = "b"
	if _, err := w.Write(ctx, drover.Assignment{Leader: "a", Queues: target}); err != nil {
		t.Fatalf("write generation 2: %v", err)
	}
	st := w.LastWrite()
	// One multi: the epoch check, a chunk and a header for a and for b, the
	// header /assignment.
	if st.Multis != 1 || st.Ops != 6 {
		t.Fatalf("writes for one moved queue: want 1 multi of 6 ops, have %+v", st)
	}
	got = until(t, shareB, "b's share at generation 2", func(an AssignmentNode) bool { return an.Assignment.Generation == 2 })
	if bq := got.ShareQueues("b"); bq[moved] != "b" || len(bq) != 1001 {
		t.Fatalf("b's share after the move: want 1,001 queues with %s, have %d", moved, len(bq))
	}
	_, stC2, err := member.conn.Get(member.sharePath("c"))
	if err != nil {
		t.Fatal(err)
	}
	if stC2.Version != stC.Version {
		t.Fatalf("share of c, untouched by the move: version went from %d to %d", stC.Version, stC2.Version)
	}

	// b leaves the target: its share is emptied (b must see it), and one
	// generation later removed.
	delete(target, moved)
	for q, m := range target {
		if m == "b" {
			target[q] = "c"
		}
	}
	if _, err := w.Write(ctx, drover.Assignment{Leader: "a", Queues: target}); err != nil {
		t.Fatalf("write generation 3: %v", err)
	}
	got = until(t, shareB, "b's empty share", func(an AssignmentNode) bool { return an.Assignment.Generation == 3 })
	if n := len(got.ShareQueues("b")); n != 0 {
		t.Fatalf("b's share at generation 3: want empty, have %d queues", n)
	}
	if _, err := w.Write(ctx, drover.Assignment{Leader: "a", Strategy: "other", Queues: target}); err != nil {
		t.Fatalf("write generation 4: %v", err)
	}
	if ok, _, _ := member.conn.Exists(member.sharePath("b")); ok {
		t.Fatalf("b's share header, empty for a generation: want removed, still there")
	}
	whole, err := member.Assignments().Read(ctx)
	if err != nil || !maps.Equal(whole.Assignment.Queues, target) || whole.Assignment.Generation != 4 {
		t.Fatalf("whole assignment: want generation 4 with the target, have generation %d, %d queues (%v)",
			whole.Assignment.Generation, len(whole.Assignment.Queues), err)
	}
}

// A member that reads its share while the leader is writing it — a chunk of
// a newer generation than its share header names — does not act on it, and
// gets the complete share once the header is written.
func TestShareIsNotReadBeforeItsHeaderIsWritten(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	leader, member := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	w, _ := leaderWriter(t, leader, "a")
	target := spread(100, "a", "b")
	if _, err := w.Write(ctx, drover.Assignment{Leader: "a", Queues: target}); err != nil {
		t.Fatalf("write generation 1: %v", err)
	}
	shareA := member.Assignments().WatchShare(ctx, "a")
	until(t, shareA, "a's share at generation 1", func(an AssignmentNode) bool { return an.Assignment.Generation == 1 })

	// Generation 2 moves a queue from a to b, one operation per multi, and
	// stops after the first multi (a's chunk, written before a's header).
	moved := shareOf(target, "a")[0]
	target[moved] = "b"
	w.oneOpPerMulti = true
	paused, resume := make(chan struct{}), make(chan struct{})
	w.afterMulti = func(i int) error {
		if i == 0 {
			close(paused)
			<-resume
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.Write(ctx, drover.Assignment{Leader: "a", Queues: target})
		done <- err
	}()
	<-paused
	_, err := readShareOnce(t, member, "a")
	if !errors.Is(err, errShareIncomplete) {
		t.Fatalf("reading a's share between its chunk and its header: want errShareIncomplete, have %v", err)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatalf("write generation 2: %v", err)
	}
	if w.LastWrite().Multis < 3 {
		t.Fatalf("the write was meant to take several multis, took %+v", w.LastWrite())
	}
	got := until(t, shareA, "a's share at generation 2", func(an AssignmentNode) bool { return an.Assignment.Generation == 2 })
	if have, want := sortedKeys(got.ShareQueues("a")), shareOf(target, "a"); fmt.Sprint(have) != fmt.Sprint(want) {
		t.Fatalf("a's share at generation 2: want %v, have %v", want, have)
	}
}

// A write cut short by a lost leadership leaves shares members do not act
// on; the next leader completes them when it takes over.
func TestChunkedWriteCutByLeaderLossIsCompletedByTheNextLeader(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	a, b, member := connect(t, server.Addrs, root), connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	wa, la := leaderWriter(t, a, "a")
	target := spread(300, "m1", "m2", "m3")
	if _, err := wa.Write(ctx, drover.Assignment{Leader: "a", Queues: target}); err != nil {
		t.Fatalf("write generation 1: %v", err)
	}
	// Generation 2 gives everything to m1 and m2; a loses its leadership
	// after the first multi.
	gen2 := map[string]string{}
	for q, m := range target {
		if m == "m3" {
			m = "m2"
		}
		gen2[q] = m
	}
	wa.oneOpPerMulti = true
	wa.afterMulti = func(i int) error {
		la.Resign(context.Background())
		return errors.New("leadership lost")
	}
	if _, err := wa.Write(ctx, drover.Assignment{Leader: "a", Queues: gen2}); err == nil {
		t.Fatal("a write cut after its first multi reported success")
	}
	_, err := readShareOnce(t, member, "m2")
	if !errors.Is(err, errShareIncomplete) {
		t.Fatalf("m2's share after the cut write: want errShareIncomplete, have %v", err)
	}
	shareM3 := member.Assignments().WatchShare(ctx, "m3")
	if got := next(t, shareM3, "m3's share"); got.Assignment.Generation != 1 || len(got.ShareQueues("m3")) != 100 {
		t.Fatalf("m3's share after the cut write: want generation 1 with 100 queues, have generation %d with %d", got.Assignment.Generation, len(got.ShareQueues("m3")))
	}

	wb, _ := leaderWriter(t, b, "b")
	for _, m := range []string{"m1", "m2", "m3"} {
		if _, err := readShareOnce(t, member, m); err != nil {
			t.Fatalf("%s's share after the next leader took over: %v", m, err)
		}
	}
	whole, err := member.Assignments().Read(ctx)
	if err != nil || len(whole.Assignment.Queues) != 300 || whole.Assignment.Generation <= 1 {
		t.Fatalf("assignment after the repair: want 300 queues above generation 1, have %d at %d (%v)", len(whole.Assignment.Queues), whole.Assignment.Generation, err)
	}
	if !maps.Equal(wb.Current().Queues, whole.Assignment.Queues) {
		t.Fatal("the new leader's current assignment differs from the stored one")
	}
	total := 0
	for _, m := range []string{"m1", "m2", "m3"} {
		an, _ := readShareOnce(t, member, m)
		total += len(an.ShareQueues(m))
	}
	if total != 300 {
		t.Fatalf("queues over all shares after the repair: want 300 (each once), have %d", total)
	}
	if _, err := wb.Write(ctx, drover.Assignment{Leader: "b", Queues: gen2}); err != nil {
		t.Fatalf("write by the next leader: %v", err)
	}
	got := until(t, shareM3, "m3's share emptied", func(an AssignmentNode) bool { return len(an.ShareQueues("m3")) == 0 })
	if got.Assignment.Generation <= 1 {
		t.Fatalf("m3's empty share: want a generation above 1, have %d", got.Assignment.Generation)
	}
}
