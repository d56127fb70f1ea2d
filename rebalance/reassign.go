package rebalance

import (
	"cmp"
	"slices"
	"strings"
	"sync/atomic"
)

// A change of members (a member joins, leaves or crashes) is computed from
// what moves, not from every queue (docs/decisions.md, "Issue 43: a join
// moves what it needs"). Sticky's whole computation sorts every queue and
// builds a result of every queue: at 100 × 1,000,000 that was seconds of
// a leader's CPU for a join that moves one queue in a hundred. Without
// tags, what Sticky does after a change of members depends only on each
// member's load, the queues of the members gone, and, of each member above
// its new target, the queues it would give first (heaviest, then the lowest
// moveRank): a member never gives more than its surplus and two. Reassign
// runs Sticky's own passes over just those queues, on top of the loads the
// Placer keeps, so its result is Sticky's.

// rankBlock is how many of a donor's queues Reassign ranks together.
const rankBlock = 64

// rankTouched keeps what the blocks' touches read, so that the compiler
// keeps the touches.
var rankTouched atomic.Uint64

// ReassignStats describe one Reassign.
type ReassignStats struct {
	// Examined is how many queues the computation held: the queues of the
	// members gone and the candidates of the members above their targets.
	// It grows with the queues that move (each donor's surplus and two),
	// not with the queues assigned.
	Examined int
	// Moved is how many queues changed member (orphans included).
	Moved int
}

// Reassign recomputes the assignment the Placer tracks for a new list of
// members, as Sticky would over the same assignment: the queues of members
// no longer listed are placed (Sticky's second pass), then each member
// outside the balance bound is repaired (its third pass), taking from each
// donor the queues Sticky's first pass leaves last: the heaviest, and among
// those the lowest moveRank. assigned is the assignment in force (queue →
// member; it must name every queue the loads count), lookup gives a
// queue's weight and tags (the registry), and maxWeight is the largest
// weight assigned (Sticky's bound). It returns the queues whose member
// changes (queue → new member) and false, changing nothing, when it cannot
// stand for Sticky: a member offers tags, a queue of a member gone is not
// found or requires tags, or a donor would have to give more than its
// candidates. On success the Placer tracks the new members and loads.
func (p *Placer) Reassign(members []Member, assigned map[string]string, lookup func(name string) (Queue, bool), maxWeight int64) (map[string]string, ReassignStats, bool) {
	var stats ReassignStats
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	pr := &problem{allEligible: true, maxWeight: max(maxWeight, 1), totalWeight: p.weight}
	index := make(map[string]int, len(sorted))
	base := make([]int64, len(sorted)) // loads before the candidates are added back
	known := make([]bool, len(sorted)) // the Placer tracks the member's load
	for i, m := range sorted {
		if len(m.Tags) > 0 || (i > 0 && sorted[i-1].Name == m.Name) || m.Name == "" {
			return nil, stats, false
		}
		c := clamp(m.Capacity, MaxCapacity)
		pr.members = append(pr.members, member{name: m.Name, capacity: c})
		pr.totalCapacity += c
		index[m.Name] = i
		if old := p.index(m.Name); old >= 0 {
			base[i], known[i] = p.load[old], true
		}
	}
	if len(sorted) == 0 {
		return nil, stats, false
	}
	// How many queues each member may give: its surplus over its new
	// target, in queues of weight one at least, and two more (a repair
	// leaves a donor's deficit below one queue's weight; see Sticky).
	want := make([]int, len(sorted))
	for i := range sorted {
		deficit := pr.totalWeight*pr.members[i].capacity - base[i]*pr.totalCapacity
		if deficit < 0 {
			want[i] = int(-deficit/pr.totalCapacity) + 2
		}
	}
	// One pass over the assignment: the queues of the members gone, and
	// each donor's best candidates (a threshold keeps the pass to a hash
	// a queue for all but a donor's first few).
	type cand struct {
		q      Queue
		weight int64
		rank   uint64
	}
	// better orders a donor's candidates: the first is given first.
	better := func(a, b cand) int {
		if c := cmp.Compare(b.weight, a.weight); c != 0 {
			return c
		}
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		return strings.Compare(a.q.Name, b.q.Name)
	}
	cands := make([][]cand, len(sorted))
	full := make([]bool, len(sorted))  // the donor's list was cut: it holds more
	worst := make([]cand, len(sorted)) // once cut, the last candidate kept
	var orphans []Queue
	// A donor's queues are ranked a block at a time: the block's names
	// are touched first, so that their cache misses (a million names at
	// random places in memory) overlap rather than wait one by one inside
	// each hash (docs/decisions.md, "Issue 43: a join ranks its donors'
	// queues a block at a time").
	type ranked struct {
		name   string
		member int
	}
	var block [rankBlock]ranked
	n := 0
	rank := func() bool {
		touched := byte(0)
		for _, r := range block[:n] {
			if len(r.name) > 0 {
				touched |= r.name[0] ^ r.name[len(r.name)-1] // its cache lines
			}
		}
		rankTouched.Add(uint64(touched))
		for _, r := range block[:n] {
			i, name := r.member, r.name
			c := cand{q: Queue{Name: name, Weight: 1}, weight: 1, rank: moveRank(name)}
			if pr.maxWeight > 1 {
				q, found := lookup(name)
				if !found {
					return false
				}
				c = cand{q: q, weight: Weight(q), rank: c.rank}
			}
			list := cands[i]
			if full[i] && better(c, worst[i]) >= 0 {
				continue // not among the donor's first want[i]
			}
			list = append(list, c)
			if len(list) >= 2*want[i]+16 {
				slices.SortFunc(list, better)
				list, full[i] = list[:want[i]], true
				worst[i] = list[len(list)-1]
			}
			cands[i] = list
		}
		n = 0
		return true
	}
	for name, m := range assigned {
		i, ok := index[m]
		if !ok {
			q, found := lookup(name)
			if !found || len(q.Tags) > 0 {
				return nil, stats, false
			}
			orphans = append(orphans, q)
			continue
		}
		if !known[i] {
			return nil, stats, false // queues the loads do not count
		}
		if want[i] == 0 {
			continue
		}
		block[n] = ranked{name, i}
		if n++; n == rankBlock && !rank() {
			return nil, stats, false
		}
	}
	if !rank() {
		return nil, stats, false
	}
	for i, list := range cands {
		if len(list) > want[i] {
			slices.SortFunc(list, better)
			cands[i], full[i] = list[:want[i]], true
		}
	}
	// Sticky's passes over those queues, each member starting from the
	// load of the queues it keeps out of the computation.
	for i, list := range cands {
		for _, c := range list {
			base[i] -= c.weight
			pr.queues = append(pr.queues, queue{name: c.q.Name, weight: c.weight, home: i})
		}
	}
	for _, q := range orphans {
		pr.queues = append(pr.queues, queue{name: q.Name, weight: Weight(q), home: -1})
	}
	slices.SortFunc(pr.queues, func(a, b queue) int { return strings.Compare(a.name, b.name) })
	all := make([]int, len(sorted))
	eligible := make([]bool, len(sorted))
	for i := range all {
		all[i], eligible[i] = i, true
	}
	pr.classes = []class{{eligible: all, isEligible: eligible}}
	stats.Examined = len(pr.queues)
	s := newStickyState(pr)
	copy(s.load, base)
	s.keepHomes()
	s.placeOrphans()
	s.repair()
	out := map[string]string{}
	given := make([]int, len(sorted))
	for q, m := range s.owner {
		if home := pr.queues[q].home; m != home {
			out[pr.queues[q].name] = pr.members[m].name
			if home >= 0 {
				given[home]++
			}
		}
	}
	for i := range sorted {
		if full[i] && given[i] >= want[i] {
			// It gave every candidate it had: Sticky might have taken
			// more of it. Cannot happen by the bound; never guess.
			return nil, stats, false
		}
	}
	stats.Moved = len(out)
	p.members, p.load, p.capacity = pr.members, s.load, pr.totalCapacity
	return out, stats, true
}
