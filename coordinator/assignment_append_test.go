package coordinator

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// Append adds new queues by writing one appended chunk per share that
// gains some, however large the shares are; members read them like any
// chunk, a new leader reads them back, and the next Write folds them into
// the hashed chunks.
func TestAppendWritesOnlyTheNewQueues(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	leader, member := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	w, lead := leaderWriter(t, leader, "a")
	target := spread(30000, "a", "b") // 15,000 a share: two hashed chunks each
	if _, err := w.Write(ctx, drover.Assignment{Leader: "a", Queues: target}); err != nil {
		t.Fatal(err)
	}
	full := w.LastWrite()
	chunks := func(m string) int {
		names, _, err := member.conn.Children(member.sharePath(m))
		if err != nil {
			t.Fatal(err)
		}
		return len(names)
	}
	hashed := chunks("b")
	if hashed < 2 {
		t.Fatalf("setup: want a share of several hashed chunks, have %d", hashed)
	}
	shareB := member.Assignments().WatchShare(ctx, "b")
	until(t, shareB, "b's share", func(an AssignmentNode) bool { return an.Assignment.Generation == 1 })

	for round := range 2 {
		placed := map[string]string{}
		for i := range 10 {
			placed[fmt.Sprintf("new-%d-%d", round, i)] = []string{"a", "b"}[i%2]
		}
		a, err := w.Append(ctx, placed)
		if err != nil {
			t.Fatalf("append round %d: %v", round, err)
		}
		maps.Copy(target, placed)
		st := w.LastWrite()
		// The epoch check, a chunk and a header per share, /assignment.
		if st.Multis != 1 || st.Ops != 6 || st.Bytes*20 > full.Bytes {
			t.Fatalf("append round %d of 10 queues: want 1 multi of 6 ops and a small fraction of the %d bytes of the whole write, have %+v", round, full.Bytes, st)
		}
		if a.Generation != int64(2+round) || !maps.Equal(w.Current().Queues, target) {
			t.Fatalf("append round %d: generation %d, %d queues; want %d, %d", round, a.Generation, len(w.Current().Queues), 2+round, len(target))
		}
		got := until(t, shareB, "b's share after the append", func(an AssignmentNode) bool { return an.Assignment.Generation == a.Generation })
		if have, want := sortedKeys(got.ShareQueues("b")), shareOf(target, "b"); fmt.Sprint(have) != fmt.Sprint(want) {
			t.Fatalf("round %d: b's share: want %d queues, have %d", round, len(want), len(have))
		}
		if n := chunks("b"); n != hashed+1 {
			t.Fatalf("round %d: b's share has %d chunks, want the %d hashed and one appended", round, n, hashed)
		}
	}
	if _, err := w.Append(ctx, map[string]string{"new-0-0": "b"}); err == nil {
		t.Fatal("appended a queue assigned already")
	}

	// A new leader reads the appended chunks back.
	lead.Resign(ctx)
	w2, _ := leaderWriter(t, member, "b")
	if !maps.Equal(w2.Current().Queues, target) {
		t.Fatalf("a new leader reads %d queues, want %d", len(w2.Current().Queues), len(target))
	}
	// Its next whole write folds them.
	if _, err := w2.Write(ctx, drover.Assignment{Leader: "b", Queues: target}); err != nil {
		t.Fatal(err)
	}
	if n := chunks("b"); n != hashed {
		t.Fatalf("after a whole write b's share has %d chunks, want %d hashed", n, hashed)
	}
	whole, err := member.Assignments().Read(ctx)
	if err != nil || !maps.Equal(whole.Assignment.Queues, target) {
		t.Fatalf("whole assignment after the fold: %d queues (%v), want %d", len(whole.Assignment.Queues), err, len(target))
	}
}

// A churning share reuses the appended chunks its removals emptied: keys
// that arrived together are appended together and retire together, so a
// placement after they retired fills their emptied chunk instead of
// adding one, and the share's chunks stay as many as its live queues need
// (with a new chunk per filled one, a churning share reached the bound on
// appended chunks about every two minutes and the whole assignment was
// rewritten; the retirements then found their keys in every hashed
// chunk). Fails on the writer that only ever filled the last chunk.
func TestAPlacementReusesAnAppendedChunkItsRemovalsEmptied(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	leader, member := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	w, _ := leaderWriter(t, leader, "a")
	if _, err := w.Write(ctx, drover.Assignment{Leader: "a", Queues: spread(1000, "a")}); err != nil {
		t.Fatal(err)
	}
	chunks := func() int {
		names, _, err := member.conn.Children(member.sharePath("a"))
		if err != nil {
			t.Fatal(err)
		}
		return len(names)
	}
	// Waves of keys, each filling an appended chunk on its own.
	wave := func(n int) map[string]string {
		placed := map[string]string{}
		for i := range appendChunkBytes / 20 {
			placed[fmt.Sprintf("wave-%d-key-%06d", n, i)] = "a"
		}
		if _, err := w.Append(ctx, placed); err != nil {
			t.Fatalf("append wave %d: %v", n, err)
		}
		return placed
	}
	first := wave(0)
	wave(1)
	wave(2)
	before := chunks()
	if _, err := w.Remove(ctx, slices.Collect(maps.Keys(first))); err != nil {
		t.Fatal(err)
	}
	wave(3)
	if after := chunks(); after != before {
		t.Fatalf("a wave after the first wave retired: want its emptied chunk reused (%d chunks), have %d", before, after)
	}
	// The share reads back whole.
	got, err := member.Assignments().Read(ctx)
	if err != nil || !maps.Equal(got.Assignment.Queues, w.Current().Queues) {
		t.Fatalf("assignment read back: %d queues (%v), want %d", len(got.Assignment.Queues), err, len(w.Current().Queues))
	}
}

// A churning family's removals rewrite the few appended chunks their keys
// went into, not the whole shares: keys arrive in waves, each retires
// retireAfter waves later, and the removals go out every fifth wave (as
// the leader batches them while keys are placed). With a new chunk per
// filled one, the shares reached the bound on appended chunks, a whole
// write re-hashed them, and each removal after it rewrote every hashed
// chunk of both shares. Fails on that writer.
func TestAChurnsRemovalsRewriteTheChunksTheirKeysWereAppendedTo(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	leader := connect(t, server.Addrs, testenv.Chroot(t))
	ctx := ctxT(t)
	w, _ := leaderWriter(t, leader, "a")
	if _, err := w.Write(ctx, drover.Assignment{Leader: "a", Queues: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	const (
		perWave     = 100 // keys a member gets a wave
		retireAfter = 64  // waves
		waves       = 240
	)
	// 40-byte names: 800 fill an appended chunk.
	key := func(wave, i int, m string) string { return fmt.Sprintf("c-%s-%03d-%04d-%026d", m, wave, i, 0) }
	var removedBytes, removedKeys int
	var due []string
	for wave := range waves {
		placed := map[string]string{}
		for _, m := range []string{"a", "b"} {
			for i := range perWave {
				placed[key(wave, i, m)] = m
			}
		}
		if old := wave - retireAfter; old >= 0 {
			for _, m := range []string{"a", "b"} {
				for i := range perWave {
					due = append(due, key(old, i, m))
				}
			}
		}
		var removed []string
		if wave%5 == 4 {
			removed, due = due, nil
		}
		if _, err := w.Update(ctx, placed, removed); err != nil {
			t.Fatalf("wave %d: %v", wave, err)
		}
		st := w.LastWrite()
		if len(removed) > 0 && wave > 2*retireAfter {
			removedBytes += st.Bytes
			removedKeys += len(removed)
		}
	}
	perKey := removedBytes / max(removedKeys, 1)
	t.Logf("%d keys removed after the warm-up, %d bytes written per key removed (the wave's placements included)", removedKeys, perKey)
	if perKey > 120 {
		t.Fatalf("a churn's removals: want at most 120 bytes written per key removed, have %d", perKey)
	}
}
