package rebalance

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"

	"github.com/drover-dev/drover/internal/namehash"
)

// Sticky keeps every queue on its previous owner unless balance needs it to
// move, balancing load (the sum of the weights of a member's queues) in
// proportion to capacity, and honouring tags. It is the default strategy.
//
// Without tag constraints it guarantees, for every member i,
//
//	|loadᵢ − W·cᵢ/C| < w_max
//
// (W the total weight, cᵢ the member's capacity, C the total capacity, w_max
// the largest weight; with unit weights every member owns ⌊W·cᵢ/C⌋ or
// ⌈W·cᵢ/C⌉ queues), and with unit weights it moves exactly the minimum number
// of queues any assignment within that bound needs. With tags, targets come
// from a greedy placement and balance is best effort. The package
// documentation gives the algorithm and every guarantee.
type Sticky struct{}

// Name returns "sticky".
func (Sticky) Name() string { return StickyName }

// Assign computes the sticky assignment; see Sticky.
func (Sticky) Assign(in Input) (Result, error) {
	p, err := newProblem(in)
	if err != nil {
		return Result{}, fmt.Errorf("sticky assignment: %w", err)
	}
	if len(p.queues) == 0 {
		return p.result(nil), nil
	}
	s := newStickyState(p)
	s.keepHomes()
	s.placeOrphans()
	s.repair()
	return p.result(s.owner), nil
}

// stickyState is one sticky computation. Loads are integer weights; targets
// are scaled by scale so that they are integers too, and a member's deficit
// (target − load·scale) is exact.
type stickyState struct {
	p      *problem
	scale  int64
	target []int64 // by member, scaled
	load   []int64 // by member, unscaled
	bound  int64   // w_max·scale: the largest deficit allowed either way, exclusive
	owner  []int   // by queue; -1 while unplaced
	held   []holding
	// arrivals counts, by member, the queues it holds that are not its own
	// from the previous assignment.
	arrivals []int
}

// holding is what one member owns, in buckets by class so that a queue
// eligible for a given receiver is found without scanning every queue.
type holding struct {
	buckets []bucket
	byClass map[int]int // class → index in buckets
}

type bucket struct {
	class int
	home  []int // queues whose previous owner is this member; heaviest last
	away  []int // queues moved here in this computation
}

func newStickyState(p *problem) *stickyState {
	s := &stickyState{
		p:      p,
		target: make([]int64, len(p.members)),
		load:   make([]int64, len(p.members)),
		owner:  make([]int, len(p.queues)),
		held:   make([]holding, len(p.members)),

		arrivals: make([]int, len(p.members)),
	}
	for q := range s.owner {
		s.owner[q] = -1
	}
	if p.allEligible {
		s.scale = p.totalCapacity
		for m := range p.members {
			s.target[m] = p.totalWeight * p.members[m].capacity
		}
	} else {
		s.scale = 1
		s.target = greedyLoads(p)
	}
	s.bound = p.maxWeight * s.scale
	return s
}

// greedyLoads returns the loads of a fresh greedy placement: most constrained
// and heaviest queues first, each onto the eligible member whose load per
// unit of capacity is lowest after taking it (ties: the first by name).
func greedyLoads(p *problem) []int64 {
	load := make([]int64, len(p.members))
	for _, q := range p.placementOrder(indexes(len(p.queues))) {
		w := p.queues[q].weight
		best := -1
		for _, m := range p.classes[p.queues[q].class].eligible {
			// (load[m]+w)/cap[m] < (load[best]+w)/cap[best], cross-multiplied.
			if best < 0 || (load[m]+w)*p.members[best].capacity < (load[best]+w)*p.members[m].capacity {
				best = m
			}
		}
		load[best] += w
	}
	return load
}

func (s *stickyState) deficit(m int) int64 { return s.target[m] - s.load[m]*s.scale }

// keepHomes is pass 1: every queue with a home stays there.
func (s *stickyState) keepHomes() {
	// The sort keys sit beside each queue's index, so that comparing two
	// queues reads one record: looking a queue's rank up in a map from the
	// comparator took 60% of a join's computation at 100 × 1,000,000
	// (docs/decisions.md, "Issue 43: a million keys").
	type keptQueue struct {
		q      int
		weight int64
		idle   bool
		rank   uint64
	}
	var kept []keptQueue
	for q := range s.p.queues {
		if qq := &s.p.queues[q]; qq.home >= 0 {
			kept = append(kept, keptQueue{q: q, weight: qq.weight, idle: qq.idle, rank: moveRank(qq.name)})
		}
	}
	// Lightest first, so that a bucket's heaviest queue is last (pick
	// moves the last). Among equal weights the queues hinted idle come
	// last, and then the lowest moveRank is last: never name order, which
	// gave away the same live customer at every retirement beside it
	// (docs/decisions.md, "Issue 40: removals are placement").
	slices.SortFunc(kept, func(a, b keptQueue) int {
		if c := cmp.Compare(a.weight, b.weight); c != 0 {
			return c
		}
		if a.idle != b.idle {
			if a.idle {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(b.rank, a.rank); c != 0 {
			return c
		}
		return cmp.Compare(b.q, a.q) // a collision of 64-bit hashes
	})
	for _, k := range kept {
		s.add(k.q, s.p.queues[k.q].home)
	}
}

// placeOrphans is pass 2: every queue without a home goes to the eligible
// member with the largest deficit (ties: the first by name).
func (s *stickyState) placeOrphans() {
	var orphans []int
	for q := range s.p.queues {
		if s.owner[q] < 0 {
			orphans = append(orphans, q)
		}
	}
	for _, q := range s.p.placementOrder(orphans) {
		best := -1
		for _, m := range s.p.classes[s.p.queues[q].class].eligible {
			if best < 0 || s.deficit(m) > s.deficit(best) {
				best = m
			}
		}
		s.add(q, best)
	}
}

// repair is pass 3: move queues until no member is bound or more away from
// its target, or no eligible move can bring one closer. Members above the
// bound shed first: those moves are forced whatever else happens, and a
// member below the bound that receives one needs one move fewer.
func (s *stickyState) repair() {
	// A single move from k to i of weight w happens only when deficit(i) −
	// deficit(k) > w·scale, so it lowers Σ deficit² by 2w·scale·(that gap −
	// w·scale) > 0, and a chain only when it lowers Σ deficit² too: the
	// repair ends on its own. The limit only bounds the work should a future
	// change break that argument.
	limit := 4 * (len(s.p.queues) + len(s.p.members))
	for range limit {
		if !s.fixOverloaded() && !s.fixUnderloaded() && !s.fixByChain() {
			return
		}
	}
}

// fixUnderloaded moves one queue to a member whose deficit is bound or more,
// from the eligible donor with the most negative deficit. Taking a queue of
// weight w ≤ w_max leaves the receiver's deficit ≥ 0 and the donor's below
// w·scale, so no member is pushed out of the bound. It reports whether it
// moved a queue.
func (s *stickyState) fixUnderloaded() bool {
	return s.firstOf(func(d int64) bool { return d >= s.bound }, true, s.feed)
}

// feed moves one queue to member i from the eligible donor with the most
// negative deficit and reports whether there was one.
func (s *stickyState) feed(i int) bool {
	return s.moveWith(i, true, func(k int) bool { return s.deficit(k) < 0 },
		func(k, donor int) bool { return s.deficit(k) < s.deficit(donor) })
}

// moveWith moves one queue between member m and the best partner: among
// the members candidate accepts, each better than the best so far, the
// last that can give m a queue (toM) or take one of m's. It reports
// whether it moved one.
func (s *stickyState) moveWith(m int, toM bool, candidate func(int) bool, better func(a, best int) bool) bool {
	best, pick := -1, bucketPick{}
	for k := range s.p.members {
		if !candidate(k) || (best >= 0 && !better(k, best)) {
			continue
		}
		donor, receiver := m, k
		if toM {
			donor, receiver = k, m
		}
		if bp, ok := s.pick(donor, receiver); ok {
			best, pick = k, bp
		}
	}
	if best < 0 {
		return false
	}
	if toM {
		s.move(best, pick, m)
	} else {
		s.move(m, pick, best)
	}
	return true
}

// fixOverloaded moves one queue from a member whose deficit is −bound or
// less to an eligible receiver with a positive deficit, the best by
// betterReceiver. Giving a queue of weight w ≤ w_max leaves the donor's
// deficit ≤ 0 and the receiver's above −w·scale, so no member is pushed out
// of the bound. It reports whether it moved a queue.
func (s *stickyState) fixOverloaded() bool {
	return s.firstOf(func(d int64) bool { return d <= -s.bound }, false, s.drain)
}

// drain moves one queue from member k to the best eligible receiver below
// its target and reports whether there was one.
func (s *stickyState) drain(k int) bool {
	return s.moveWith(k, false, func(i int) bool { return s.deficit(i) > 0 }, s.betterReceiver)
}

// firstOf applies fix to the members whose deficit satisfies out, in the
// order of violators, until one succeeds, and reports whether one did. The
// first of that order is found without sorting, as without tags it always
// succeeds.
func (s *stickyState) firstOf(out func(int64) bool, largestFirst bool, fix func(int) bool) bool {
	first := -1
	for m := range s.p.members {
		if d := s.deficit(m); out(d) && (first < 0 || (largestFirst && d > s.deficit(first)) || (!largestFirst && d < s.deficit(first))) {
			first = m
		}
	}
	if first < 0 {
		return false
	}
	if fix(first) {
		return true
	}
	for _, m := range s.violators(out, largestFirst) {
		if m != first && fix(m) {
			return true
		}
	}
	return false
}

// betterReceiver reports whether member a should take a shed queue before
// member b (both below their targets):
//
//  1. a member bound or more below its target (the move fixes two members);
//  2. a member already gaining queues in this computation, or owning none
//     (such as one that just joined): handing more to members that are
//     claiming anyway leaves the rest of the fleet untouched;
//  3. the least load per unit of capacity;
//  4. the furthest below its target.
func (s *stickyState) betterReceiver(a, b int) bool {
	if ua, ub := s.deficit(a) >= s.bound, s.deficit(b) >= s.bound; ua != ub {
		return ua
	}
	if ga, gb := s.gaining(a), s.gaining(b); ga != gb {
		return ga
	}
	ra := s.load[a] * s.p.members[b].capacity
	rb := s.load[b] * s.p.members[a].capacity
	if ra != rb {
		return ra < rb
	}
	return s.deficit(a) > s.deficit(b)
}

// gaining reports whether member m has received a queue in this computation
// or owns none.
func (s *stickyState) gaining(m int) bool { return s.arrivals[m] > 0 || s.load[m] == 0 }

// violators returns the members whose deficit satisfies out, the largest
// deficit first when largestFirst is set, else the smallest first; ties by
// name.
func (s *stickyState) violators(out func(int64) bool, largestFirst bool) []int {
	var ms []int
	for m := range s.p.members {
		if out(s.deficit(m)) {
			ms = append(ms, m)
		}
	}
	slices.SortFunc(ms, func(a, b int) int {
		c := cmp.Compare(s.deficit(a), s.deficit(b))
		if largestFirst {
			c = -c
		}
		if c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return ms
}

// bucketPick names the queue a move takes: the last of a bucket's away or
// home list.
type bucketPick struct {
	bucket int
	away   bool
}

// pick chooses the queue member k would give to member i: one of k's queues
// i is eligible for, preferring a queue that already moved (moving it again
// adds no move), then the heaviest. It reports false when k holds nothing i
// may own.
func (s *stickyState) pick(k, i int) (bucketPick, bool) {
	best, found := bucketPick{}, false
	var bestWeight int64
	for b := range s.held[k].buckets {
		bk := &s.held[k].buckets[b]
		if !s.p.classes[bk.class].isEligible[i] {
			continue
		}
		var q int
		var away bool
		switch {
		case len(bk.away) > 0:
			q, away = bk.away[len(bk.away)-1], true
		case len(bk.home) > 0:
			q = bk.home[len(bk.home)-1]
		default:
			continue
		}
		w := s.p.queues[q].weight
		if !found || (away && !best.away) || (away == best.away && w > bestWeight) {
			best, bestWeight, found = bucketPick{bucket: b, away: away}, w, true
		}
	}
	return best, found
}

// add gives queue q to member m.
func (s *stickyState) add(q, m int) {
	s.owner[q] = m
	s.load[m] += s.p.queues[q].weight
	h := &s.held[m]
	c := s.p.queues[q].class
	b, ok := h.byClass[c]
	if !ok {
		if h.byClass == nil {
			h.byClass = make(map[int]int)
		}
		b = len(h.buckets)
		h.byClass[c] = b
		h.buckets = append(h.buckets, bucket{class: c})
	}
	if s.p.queues[q].home == m {
		h.buckets[b].home = append(h.buckets[b].home, q)
	} else {
		h.buckets[b].away = append(h.buckets[b].away, q)
		s.arrivals[m]++
	}
}

// move takes the picked queue from member k and gives it to member i.
func (s *stickyState) move(k int, p bucketPick, i int) {
	bk := &s.held[k].buckets[p.bucket]
	list := &bk.home
	if p.away {
		list = &bk.away
		s.arrivals[k]--
	}
	q := (*list)[len(*list)-1]
	*list = (*list)[:len(*list)-1]
	s.load[k] -= s.p.queues[q].weight
	s.add(q, i)
}

func indexes(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// moveRank orders the queues of equal weight a member may give away: the
// lowest rank moves first. It is stable (the same fleet always yields the
// same assignment) and unrelated to name order, so the queues that sort
// first are not the ones that always move.
//
// Its high 32 bits are the name's FNV-1a 32 hash with its bits reversed,
// its low 32 bits the FNV-1a 64 hash's: so the queues ranked first are
// those whose FNV-1a 32 hash ends in the most zero bits, which are the
// queues of the first chunk of the member's share for every number of
// chunks (the ZooKeeper layout puts a queue in chunk FNV32a mod n, n a
// power of two: coordinator/assignment.go). A join that takes a hundred
// queues off each member then rewrites one chunk of each share, not all
// of them (docs/decisions.md, "Issue 43: a member gives up the queues of
// one chunk"). Until the twenty-eighth session it was the FNV-1a 64 hash
// alone, which spread a donor's moves over every chunk.
//
// It is computed in place, without hash/fnv's allocations: a change of
// members ranks every queue of the donors (Placer.Reassign), a million at
// 100 × 1,000,000.
func moveRank(name string) uint64 {
	return uint64(bits.Reverse32(namehash.FNV32a(name)))<<32 | namehash.FNV64a(name)&0xffffffff
}
