package fleet

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"testing"

	"github.com/drover-dev/drover"
)

// TestCandidatesKeepWhatACorrectionMayExamine: a donor holding most of a
// large registry gets, as its candidates, the first examineLimit of its
// queues in the seeded order, the same as the whole order's prefix. The
// code before sorted and returned every queue of the donor (12,000 here)
// at each correction, on the leader's loop.
func TestCandidatesKeepWhatACorrectionMayExamine(t *testing.T) {
	var names []string
	assigned := map[string]string{}
	for i := range 16000 {
		name := fmt.Sprintf("c-key-%05d", i)
		names = append(names, name)
		assigned[name] = []string{"a", "a", "a", "b"}[i%4]
	}
	p := &placement{reg: registryOf(names)}
	cur := drover.Assignment{Generation: 42, Queues: assigned}
	need := map[donorWeight]int{{"a", 1}: 7}
	cands := p.candidates(cur, need)

	var whole []string
	for _, n := range names {
		if assigned[n] == "a" {
			whole = append(whole, n)
		}
	}
	slices.SortFunc(whole, func(x, y string) int {
		rx, ry := seededRank(cur.Generation, x), seededRank(cur.Generation, y)
		if rx != ry {
			if rx < ry {
				return -1
			}
			return 1
		}
		return strings.Compare(x, y)
	})
	got := cands[donorWeight{"a", 1}]
	if want := examineLimit(need); len(got) != want {
		t.Fatalf("the donor's candidates: have %d, want the %d a correction may examine (of %d)", len(got), want, len(whole))
	}
	if !slices.Equal(got, whole[:len(got)]) {
		t.Fatalf("the candidates are not the first of the seeded order")
	}
	if len(cands) != 1 {
		t.Fatalf("candidates for donors not in need: %v", len(cands))
	}
}

// TestSeededRankIsFNV1a: the in-place hash orders candidates exactly as
// hash/fnv's FNV-1a 64 of the seed and the name did.
func TestSeededRankIsFNV1a(t *testing.T) {
	for _, seed := range []int64{0, 1, -7, 1 << 40} {
		for _, name := range []string{"", "q", "c-key-00001", "ünïcode-queue"} {
			h := fnv.New64a()
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], uint64(seed))
			h.Write(b[:])
			h.Write([]byte(name))
			if got, want := seededRank(seed, name), h.Sum64(); got != want {
				t.Fatalf("seededRank(%d, %q) = %x, want %x", seed, name, got, want)
			}
		}
	}
}
