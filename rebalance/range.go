package rebalance

import "fmt"

// Range is the Kafka classic range assignment. Queues are grouped by the set
// of members eligible for them (without tag constraints all queues are one
// group, as one topic is in Kafka); within a group the queues, sorted by
// name, are cut into contiguous ranges over the group's members, sorted by
// name: with n queues and e members each member gets n/e queues and the first
// n%e members one more.
//
// Range ignores Capacity, Weight and the previous assignment. Without tag
// constraints every member owns ⌊n/m⌋ or ⌈n/m⌉ of the n queues; with several
// groups the extra queues of each group fall on the same first members, so
// counts can differ by up to the number of groups (Kafka's known range skew).
type Range struct{}

// Name returns "range".
func (Range) Name() string { return RangeName }

// Assign computes the range assignment; see Range.
func (Range) Assign(in Input) (Result, error) { return solve(RangeName, in, cutRanges) }

// cutRanges is Range's rule: it cuts each group's queues into ranges.
func cutRanges(p *problem) []int {
	// Classes (tag sets) with the same eligible members form one group.
	groupOf := make([]int, len(p.classes))
	var groupMembers [][]int
	index := map[string]int{}
	for c := range p.classes {
		key := fmt.Sprint(p.classes[c].eligible)
		g, ok := index[key]
		if !ok {
			g = len(groupMembers)
			index[key] = g
			groupMembers = append(groupMembers, p.classes[c].eligible)
		}
		groupOf[c] = g
	}
	byGroup := make([][]int, len(groupMembers))
	for q := range p.queues { // in name order
		g := groupOf[p.queues[q].class]
		byGroup[g] = append(byGroup[g], q)
	}
	owner := make([]int, len(p.queues))
	for g, qs := range byGroup {
		eligible := groupMembers[g]
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
	return owner
}
