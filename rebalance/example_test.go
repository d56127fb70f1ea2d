package rebalance_test

import (
	"fmt"

	"github.com/drover-dev/drover/rebalance"
)

// A third worker joins two that share six queues: sticky hands it one queue
// from each and moves nothing else. Which of a member's equal queues moves
// is chosen by a hash of the names, never by name order.
func ExampleSticky() {
	strategy, err := rebalance.ByName("sticky")
	if err != nil {
		panic(err)
	}
	previous := map[string]string{
		"emails": "w1", "images": "w1", "reports": "w1",
		"billing": "w2", "search": "w2", "webhooks": "w2",
	}
	in := rebalance.Input{
		Previous: previous,
		Members:  []rebalance.Member{{Name: "w1"}, {Name: "w2"}, {Name: "w3"}},
		Queues: []rebalance.Queue{
			{Name: "emails"}, {Name: "images"}, {Name: "reports"},
			{Name: "billing"}, {Name: "search"}, {Name: "webhooks"},
		},
	}
	res, err := strategy.Assign(in)
	if err != nil {
		panic(err)
	}
	for _, m := range rebalance.Moves(previous, res.Queues) {
		fmt.Printf("%s: %s → %s\n", m.Queue, m.From, m.To)
	}
	// Output:
	// billing: w2 → w3
	// reports: w1 → w3
}

// Queues that require a tag go only to members offering it; a queue no member
// may own is reported, not assigned.
func ExampleRange() {
	res, err := rebalance.Range{}.Assign(rebalance.Input{
		Members: []rebalance.Member{{Name: "cpu-1"}, {Name: "gpu-1", Tags: []string{"gpu"}}},
		Queues: []rebalance.Queue{
			{Name: "render", Tags: []string{"gpu"}},
			{Name: "resize"},
			{Name: "thumbnails"},
			{Name: "train", Tags: []string{"gpu", "tpu"}},
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Queues["render"], res.Queues["resize"], res.Queues["thumbnails"])
	fmt.Println("unassignable:", res.Unassignable)
	// Output:
	// gpu-1 cpu-1 gpu-1
	// unassignable: [train]
}
