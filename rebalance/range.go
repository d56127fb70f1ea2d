package rebalance

import "fmt"

// Range is the Kafka classic range assignment. Queues are grouped by the set
// of tags they require (untagged queues are one group, as a topic is in
// Kafka); within a group the queues, sorted by name, are cut into contiguous
// ranges over the group's eligible members, sorted by name: with n queues and
// e members each member gets n/e queues and the first n%e members one more.
//
// Range ignores Capacity, Weight and the previous assignment. Without tags
// every member owns ⌊n/m⌋ or ⌈n/m⌉ of the n queues; with several tag groups
// the extra queues of each group fall on the same first members, so counts can
// differ by up to the number of groups (Kafka's known range skew).
type Range struct{}

// Name returns "range".
func (Range) Name() string { return RangeName }

// Assign computes the range assignment; see Range.
func (Range) Assign(in Input) (Result, error) {
	p, err := newProblem(in)
	if err != nil {
		return Result{}, fmt.Errorf("range assignment: %w", err)
	}
	byClass := make([][]int, len(p.classes))
	for q := range p.queues {
		c := p.queues[q].class
		byClass[c] = append(byClass[c], q)
	}
	owner := make([]int, len(p.queues))
	for c, qs := range byClass {
		eligible := p.classes[c].eligible
		n, e := len(qs), len(eligible)
		next := 0
		for i, m := range eligible {
			size := n / e
			if i < n%e {
				size++
			}
			for _, q := range qs[next : next+size] {
				owner[q] = m
			}
			next += size
		}
	}
	return p.result(owner), nil
}
