package rebalance

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// problem is an Input normalised for the strategies: members and queues
// sorted by name (so no input order or map order can leak into a result),
// capacities and weights clamped, and queues grouped into classes by the set
// of tags they require, each class knowing its eligible members.
type problem struct {
	members []member // sorted by name
	queues  []queue  // the assignable queues, sorted by name
	classes []class  // in order of first appearance in queues

	unassignable []string // sorted

	totalCapacity int64
	totalWeight   int64 // of the assignable queues
	maxWeight     int64 // of the assignable queues; 0 when there are none
	allEligible   bool  // every member is eligible for every assignable queue
}

type member struct {
	name     string
	capacity int64
}

type queue struct {
	name   string
	weight int64
	class  int
	// home is the index of the member that owned the queue in the previous
	// assignment, if that member is still present and eligible; else -1.
	home int
	// idle: Input.Idle names the queue.
	idle bool
}

// class is a group of queues requiring the same set of tags.
type class struct {
	eligible   []int  // member indexes, ascending
	isEligible []bool // by member index
}

// solve is a strategy's Assign: it normalises in and returns the result of
// owners, the strategy's rule (the owner, a member index, of each queue
// index of p). Its error names the strategy (name).
func solve(name string, in Input, owners func(p *problem) []int) (Result, error) {
	p, err := newProblem(in)
	if err != nil {
		return Result{}, fmt.Errorf("%s assignment: %w", name, err)
	}
	return p.result(owners(p)), nil
}

// newProblem validates and normalises in.
func newProblem(in Input) (*problem, error) {
	p := &problem{allEligible: true}

	members := slices.Clone(in.Members)
	slices.SortFunc(members, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	memberIndex := make(map[string]int, len(members))
	memberTags := make([]map[string]bool, len(members))
	for i, m := range members {
		if m.Name == "" {
			return nil, fmt.Errorf("%w: a member has an empty name", ErrInvalidInput)
		}
		if i > 0 && members[i-1].Name == m.Name {
			return nil, fmt.Errorf("%w: member %q appears twice", ErrInvalidInput, m.Name)
		}
		memberIndex[m.Name] = i
		c := clamp(m.Capacity, MaxCapacity)
		p.members = append(p.members, member{name: m.Name, capacity: c})
		p.totalCapacity += c
		if len(m.Tags) > 0 {
			memberTags[i] = make(map[string]bool, len(m.Tags))
			for _, t := range m.Tags {
				memberTags[i][t] = true
			}
		}
	}

	if in.Source != nil && len(in.Queues) > 0 {
		return nil, fmt.Errorf("%w: both Queues and Source are set", ErrInvalidInput)
	}
	// The queues are read once, in place: nothing of the input is copied
	// but each queue's name. A class is numbered here as first met (in
	// input order), then below in order of first appearance by name.
	n, queues := len(in.Queues), slices.Values(in.Queues)
	if in.Source != nil {
		n, queues = in.Source.Len(), in.Source.All()
	}
	classIndex := make(map[string]int)
	var classTags [][]string // by the number given here
	p.queues = make([]queue, 0, n)
	for q := range queues {
		key, tags := classKey(q.Tags)
		c, ok := classIndex[key]
		if !ok {
			c = len(classTags)
			classIndex[key] = c
			classTags = append(classTags, tags)
		}
		p.queues = append(p.queues, queue{name: q.Name, weight: clamp(q.Weight, MaxWeight), class: c})
	}
	slices.SortFunc(p.queues, func(a, b queue) int { return strings.Compare(a.name, b.name) })
	renumber := make([]int, len(classTags))
	for i := range renumber {
		renumber[i] = -1
	}
	assignable := p.queues[:0] // filtered in place
	prev := ""
	for i, q := range p.queues {
		if q.name == "" {
			return nil, fmt.Errorf("%w: a queue has an empty name", ErrInvalidInput)
		}
		if i > 0 && prev == q.name {
			return nil, fmt.Errorf("%w: queue %q appears twice", ErrInvalidInput, q.name)
		}
		prev = q.name
		c := renumber[q.class]
		if c < 0 {
			c = len(p.classes)
			renumber[q.class] = c
			p.classes = append(p.classes, newClass(classTags[q.class], memberTags))
		}
		q.class = c
		if len(p.classes[c].eligible) == 0 {
			p.unassignable = append(p.unassignable, q.name)
			continue
		}
		if len(p.classes[c].eligible) < len(p.members) {
			p.allEligible = false
		}
		q.home = -1
		q.idle = in.Idle[q.name]
		if m, ok := memberIndex[in.Previous[q.name]]; ok && p.classes[c].isEligible[m] {
			q.home = m
		}
		p.totalWeight += q.weight
		p.maxWeight = max(p.maxWeight, q.weight)
		assignable = append(assignable, q)
	}
	p.queues = assignable
	return p, nil
}

// classKey returns the sorted, de-duplicated tags and a map key for them.
func classKey(tags []string) (string, []string) {
	if len(tags) == 0 {
		return "", nil
	}
	tags = slices.Clone(tags)
	slices.Sort(tags)
	tags = slices.Compact(tags)
	return strings.Join(tags, "\x00"), tags
}

func newClass(tags []string, memberTags []map[string]bool) class {
	c := class{isEligible: make([]bool, len(memberTags))}
	for m, have := range memberTags {
		ok := true
		for _, t := range tags {
			if !have[t] {
				ok = false
				break
			}
		}
		if ok {
			c.eligible = append(c.eligible, m)
			c.isEligible[m] = true
		}
	}
	return c
}

// clamp maps v to [1, limit].
func clamp(v, limit int) int64 {
	return int64(min(max(v, 1), limit))
}

// placementOrder returns the queue indexes idx ordered for greedy placement:
// queues of the most constrained classes first (fewest eligible members),
// then heavier before lighter, then by name.
func (p *problem) placementOrder(idx []int) []int {
	slices.SortFunc(idx, func(a, b int) int {
		qa, qb := &p.queues[a], &p.queues[b]
		if c := cmp.Compare(len(p.classes[qa.class].eligible), len(p.classes[qb.class].eligible)); c != 0 {
			return c
		}
		if c := cmp.Compare(qb.weight, qa.weight); c != 0 {
			return c
		}
		return cmp.Compare(a, b) // queues are sorted by name
	})
	return idx
}

// result turns owner (member index by queue index) into a Result.
func (p *problem) result(owner []int) Result {
	r := Result{Queues: make(map[string]string, len(p.queues)), Unassignable: p.unassignable}
	for q, m := range owner {
		r.Queues[p.queues[q].name] = p.members[m].name
	}
	return r
}
