package rebalance

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestStickyTagsBalance checks that sticky reaches the fair loads in fleets
// where tags split the work cleanly, from random previous assignments: three
// gpu members (capacity gpuCapacity) and seven plain ones (capacity 1) share
// 30 gpu queues and `plain` untagged ones. The fair loads are worked out by
// hand: every member carries the same load per unit of capacity.
func TestStickyTagsBalance(t *testing.T) {
	seed := *seedFlag + 2
	r := rand.New(rand.NewSource(seed))
	for _, tc := range []struct {
		gpuCapacity, plain int
		wantGPU, wantPlain int64
	}{
		{gpuCapacity: 1, plain: 70, wantGPU: 10, wantPlain: 10},  // 100 queues, 10 capacity units
		{gpuCapacity: 2, plain: 100, wantGPU: 20, wantPlain: 10}, // 130 queues, 13 units
		{gpuCapacity: 4, plain: 160, wantGPU: 40, wantPlain: 10}, // 190 queues, 19 units
		{gpuCapacity: 1, plain: 700, wantGPU: 73, wantPlain: 73}, // gpu members take plain queues too
	} {
		var in Input
		for i := range 10 {
			m := Member{Name: fmt.Sprintf("m%d", i), Capacity: 1}
			if i < 3 {
				m.Capacity, m.Tags = tc.gpuCapacity, []string{"gpu"}
			}
			in.Members = append(in.Members, m)
		}
		for i := range 30 + tc.plain {
			q := Queue{Name: fmt.Sprintf("q%04d", i)}
			if i < 30 {
				q.Tags = []string{"gpu"}
			}
			in.Queues = append(in.Queues, q)
		}
		for round := range 20 {
			label := fmt.Sprintf("seed %d gpu capacity %d, %d plain queues, round %d", seed, tc.gpuCapacity, tc.plain, round)
			in.Previous = map[string]string{}
			for _, q := range in.Queues {
				if r.Intn(4) != 0 {
					in.Previous[q.Name] = in.Members[r.Intn(len(in.Members))].Name
				}
			}
			res := mustAssign(t, Sticky{}, in)
			checkValid(t, label, in, res)
			l := loads(in, res)
			for i, m := range in.Members {
				want := tc.wantPlain
				if i < 3 {
					want = tc.wantGPU
				}
				if d := l[m.Name] - want; d > 1 || d < -1 {
					t.Fatalf("%s: member %s: want load %d±1, have %d (all: %v)", label, m.Name, want, l[m.Name], l)
				}
			}
		}
	}
}
