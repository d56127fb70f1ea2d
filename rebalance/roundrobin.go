package rebalance

// RoundRobin deals the queues, sorted by name, one at a time over the members
// sorted by name, like Kafka's round-robin assignor: a cursor walks the circle
// of members, and each queue goes to the next member at or after the cursor
// that is eligible for it.
//
// RoundRobin ignores Capacity, Weight and the previous assignment. Without
// tags every member owns ⌊n/m⌋ or ⌈n/m⌉ of the n queues.
type RoundRobin struct{}

// Name returns "round-robin".
func (RoundRobin) Name() string { return RoundRobinName }

// Assign computes the round-robin assignment; see RoundRobin.
func (RoundRobin) Assign(in Input) (Result, error) { return solve(RoundRobinName, in, deal) }

// deal is RoundRobin's rule: it deals the queues over the members.
func deal(p *problem) []int {
	owner := make([]int, len(p.queues))
	cursor := 0
	for q := range p.queues {
		eligible := p.classes[p.queues[q].class].isEligible
		for !eligible[cursor] { // the class has an eligible member: this ends
			cursor = (cursor + 1) % len(p.members)
		}
		owner[q] = cursor
		cursor = (cursor + 1) % len(p.members)
	}
	return owner
}
