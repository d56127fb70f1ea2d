package rebalance

// fixByChain is the repair of last resort, for tag-constrained fleets: when
// no single eligible move helps a member outside the bound, it looks for a
// chain of moves through other members, such as a gpu member handing a plain
// queue to an underloaded plain member while taking a gpu queue from an
// overloaded gpu member. It applies the first chain found that lowers
// Σ deficit² and leaves every member on it inside the bound or closer to it
// than before, and reports whether it found one.
func (s *stickyState) fixByChain() bool {
	for _, i := range s.violators(func(d int64) bool { return d >= s.bound }, true) {
		if s.chain(i, true) {
			return true
		}
	}
	for _, k := range s.violators(func(d int64) bool { return d <= -s.bound }, false) {
		if s.chain(k, false) {
			return true
		}
	}
	return false
}

// chainLink is one move of a chain: from gives the picked queue to to.
type chainLink struct {
	from, to int
	pick     bucketPick
}

// chain searches breadth first (so the chain is as short as possible, ties
// by member order) from start, a member below the bound when under is set
// (the chain ends at a member above its target that feeds it), else above it
// (the chain ends at a member below its target that drains it). It applies
// the chain if it is acceptable and reports whether it did.
func (s *stickyState) chain(start int, under bool) bool {
	n := len(s.p.members)
	parent := make([]int, n)
	link := make([]chainLink, n)
	for m := range parent {
		parent[m] = -2
	}
	parent[start] = -1
	frontier := []int{start}
	end := -1
	for len(frontier) > 0 && end < 0 {
		x := frontier[0]
		frontier = frontier[1:]
		for y := range n {
			if parent[y] != -2 {
				continue
			}
			l := chainLink{from: y, to: x} // under: y feeds x
			if !under {
				l = chainLink{from: x, to: y} // over: x drains into y
			}
			p, ok := s.pick(l.from, l.to)
			if !ok {
				continue
			}
			l.pick = p
			parent[y], link[y] = x, l
			if (under && s.deficit(y) < 0) || (!under && s.deficit(y) > 0) {
				end = y
				break
			}
			frontier = append(frontier, y)
		}
	}
	if end < 0 {
		return false
	}

	// Links from end back to start. Every member must give before it
	// receives, or its pick would no longer be the last of its list: when
	// feeding start (under) that is the order from start outwards, when
	// draining start the order from end inwards, which is this one.
	var links []chainLink
	for y := end; parent[y] >= 0; y = parent[y] {
		links = append(links, link[y])
	}
	if under {
		for a, b := 0, len(links)-1; a < b; a, b = a+1, b-1 {
			links[a], links[b] = links[b], links[a]
		}
	}
	if !s.acceptable(links) {
		return false
	}
	for _, l := range links {
		s.move(l.from, l.pick, l.to)
	}
	return true
}

// acceptable reports whether applying links lowers Σ deficit² and leaves
// every member on the chain inside the bound or no further from its target
// than before.
func (s *stickyState) acceptable(links []chainLink) bool {
	type change struct {
		member int
		load   int64
	}
	var changes []change // in chain order, so the sum below is deterministic
	add := func(m int, dl int64) {
		for i := range changes {
			if changes[i].member == m {
				changes[i].load += dl
				return
			}
		}
		changes = append(changes, change{m, dl})
	}
	for _, l := range links {
		w := s.p.queues[s.picked(l.from, l.pick)].weight
		add(l.from, -w)
		add(l.to, w)
	}
	// Σ (d′² − d²) = Σ (d′ − d)(d′ + d), in float64: the squares of exact
	// deficits can overflow int64 at the clamp limits.
	var growth float64
	for _, c := range changes {
		d := s.deficit(c.member)
		nd := d - c.load*s.scale
		if abs(nd) >= s.bound && abs(nd) > abs(d) {
			return false
		}
		growth += float64(nd-d) * float64(nd+d)
	}
	return growth < 0
}

// picked returns the queue p names in member k's holding.
func (s *stickyState) picked(k int, p bucketPick) int {
	bk := &s.held[k].buckets[p.bucket]
	if p.away {
		return bk.away[len(bk.away)-1]
	}
	return bk.home[len(bk.home)-1]
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
