package rebalance

import (
	"slices"
	"strings"
)

// Placer places queues new to the fleet beside an assignment Sticky
// computed, without computing it again: the rebalance leader's answer to
// queues that appear by the thousand a second (queue families), whose cost
// must grow with the new queues, not with the registered ones
// (docs/decisions.md, "Family queues: new queues are placed, not
// rebalanced").
//
// It places each queue as Sticky's second pass places a queue without a
// home: heaviest first (ties by name), onto the member whose load is
// furthest below its share of the total weight (ties: the first by name).
// Sticky computed afresh over the result keeps every queue where it is
// (its first pass keeps every home, and its third pass finds nothing to
// repair while the placements keep each member within the balance bound).
//
// A Placer serves fleets whose members offer no tags (every untagged queue
// may then go to every member, and a tagged one to none): NewPlacer
// returns nil otherwise, and Place refuses a queue that requires tags. The
// caller then computes the assignment with the strategy.
type Placer struct {
	members  []member // sorted by name
	load     []int64  // by member: the weights of its queues
	capacity int64    // total
	weight   int64    // total
}

// NewPlacer returns a Placer for members whose queues weigh load (by member
// name: the sum of the clamped weights of its queues), or nil when a member
// offers tags. Loads of members not in members are ignored.
func NewPlacer(members []Member, load map[string]int64) *Placer {
	p := &Placer{}
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	for _, m := range sorted {
		if len(m.Tags) > 0 {
			return nil
		}
		c := clamp(m.Capacity, MaxCapacity)
		p.members = append(p.members, member{name: m.Name, capacity: c})
		p.load = append(p.load, load[m.Name])
		p.capacity += c
		p.weight += load[m.Name]
	}
	if len(p.members) == 0 {
		return nil
	}
	return p
}

// Weight returns q's weight as the strategies count it.
func Weight(q Queue) int64 { return clamp(q.Weight, MaxWeight) }

// Place assigns qs (none already assigned, names unique) and returns queue
// → member. It returns false, placing nothing, when a queue requires tags.
func (p *Placer) Place(qs []Queue) (map[string]string, bool) {
	for _, q := range qs {
		if len(q.Tags) > 0 {
			return nil, false
		}
	}
	order := slices.Clone(qs)
	for _, q := range order {
		p.weight += Weight(q)
	}
	slices.SortFunc(order, func(a, b Queue) int {
		if wa, wb := Weight(a), Weight(b); wa != wb {
			return int(wb - wa)
		}
		return strings.Compare(a.Name, b.Name)
	})
	out := make(map[string]string, len(order))
	// deficit(m) = weight·capacity(m) − load(m)·capacity, Sticky's scaled
	// deficit with the new total weight.
	deficit := func(m int) int64 { return p.weight*p.members[m].capacity - p.load[m]*p.capacity }
	for _, q := range order {
		best := 0
		for m := 1; m < len(p.members); m++ {
			if deficit(m) > deficit(best) {
				best = m
			}
		}
		p.load[best] += Weight(q)
		out[q.Name] = p.members[best].name
	}
	return out, true
}

// index returns the index of member name, or -1.
func (p *Placer) index(name string) int {
	i, ok := slices.BinarySearchFunc(p.members, name, func(m member, n string) int { return strings.Compare(m.name, n) })
	if !ok {
		return -1
	}
	return i
}

// Remove takes q, which member owns, off the loads: a queue removed from
// the fleet (retired, deleted), the mirror of Place. A member not known to
// the Placer is ignored, as its load was.
func (p *Placer) Remove(member string, q Queue) {
	if m := p.index(member); m >= 0 {
		p.load[m] -= Weight(q)
		p.weight -= Weight(q)
	}
}

// Move records that q moved from one member to another.
func (p *Placer) Move(q Queue, from, to string) {
	f, t := p.index(from), p.index(to)
	if f < 0 || t < 0 {
		return
	}
	p.load[f] -= Weight(q)
	p.load[t] += Weight(q)
}

// Balanced reports whether every member is within Sticky's balance bound,
// |load − W·c/C| < maxWeight (maxWeight: the largest weight among the
// queues, as Weight counts it): then Sticky computed over the assignment
// the Placer tracks moves nothing. Removals are what take a member out of
// the bound; Place never does.
func (p *Placer) Balanced(maxWeight int64) bool {
	bound := max(maxWeight, 1) * p.capacity
	for m := range p.members {
		if d := p.weight*p.members[m].capacity - p.load[m]*p.capacity; d >= bound || d <= -bound {
			return false
		}
	}
	return true
}

// Clone returns a Placer with the same members and loads, for a
// computation that must not change this one's (a plan).
func (p *Placer) Clone() *Placer {
	c := *p
	c.members, c.load = slices.Clone(p.members), slices.Clone(p.load)
	return &c
}

// Loads returns each member's load, by name.
func (p *Placer) Loads() map[string]int64 {
	out := make(map[string]int64, len(p.members))
	for m := range p.members {
		out[p.members[m].name] = p.load[m]
	}
	return out
}
