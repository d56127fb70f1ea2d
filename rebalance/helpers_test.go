package rebalance

import (
	"fmt"
	"iter"
	"maps"
	"math/rand"
	"slices"
	"testing"
)

// caseShape says what kind of random case gen builds.
type caseShape struct {
	members, queues int
	universal       bool // with tags: every member offers every tag
	capacities      bool // random capacities 1–8 instead of 1
	weights         bool // random weights 1–10 instead of 1
	tags            bool // members offer and queues require random tags
	previous        bool // a random previous assignment, naming some gone members
}

// gen builds a random Input of the given shape from r.
func gen(r *rand.Rand, s caseShape) Input {
	tagPool := []string{"gpu", "ssd", "eu", "us", "big"}
	randomTags := func(most int) []string {
		var tags []string
		for range r.Intn(most + 1) {
			tags = append(tags, tagPool[r.Intn(len(tagPool))])
		}
		return tags
	}
	in := Input{}
	for i := range s.members {
		m := Member{Name: fmt.Sprintf("m%03d", i), Capacity: 1}
		if s.capacities {
			m.Capacity = 1 + r.Intn(8)
		}
		if s.tags {
			m.Tags = randomTags(4)
			if s.universal {
				m.Tags = slices.Clone(tagPool)
			}
		}
		in.Members = append(in.Members, m)
	}
	for i := range s.queues {
		q := Queue{Name: fmt.Sprintf("q%05d", i), Weight: 1}
		if s.weights {
			q.Weight = 1 + r.Intn(10)
		}
		if s.tags && r.Intn(3) == 0 {
			q.Tags = randomTags(2)
		}
		in.Queues = append(in.Queues, q)
	}
	if s.previous {
		in.Previous = map[string]string{}
		for _, q := range in.Queues {
			switch n := r.Intn(10); {
			case n == 0: // no previous owner
			case n == 1:
				in.Previous[q.Name] = fmt.Sprintf("gone%d", r.Intn(3))
			default:
				if s.members > 0 {
					in.Previous[q.Name] = in.Members[r.Intn(s.members)].Name
				}
			}
		}
		in.Previous["deleted-queue"] = "m000"
	}
	return in
}

// sliceSource is a QueueSource over a slice.
type sliceSource []Queue

func (s sliceSource) Len() int             { return len(s) }
func (s sliceSource) All() iter.Seq[Queue] { return slices.Values(s) }

// sourced returns in with its queues given through a Source.
func sourced(in Input) Input {
	in.Source, in.Queues = sliceSource(in.Queues), nil
	return in
}

// shuffled returns a copy of in with members, queues and tags in another
// order: a strategy must not notice.
func shuffled(r *rand.Rand, in Input) Input {
	out := Input{Previous: maps.Clone(in.Previous), Members: slices.Clone(in.Members), Queues: slices.Clone(in.Queues)}
	r.Shuffle(len(out.Members), func(i, j int) { out.Members[i], out.Members[j] = out.Members[j], out.Members[i] })
	r.Shuffle(len(out.Queues), func(i, j int) { out.Queues[i], out.Queues[j] = out.Queues[j], out.Queues[i] })
	for i := range out.Members {
		tags := slices.Clone(out.Members[i].Tags)
		r.Shuffle(len(tags), func(a, b int) { tags[a], tags[b] = tags[b], tags[a] })
		out.Members[i].Tags = tags
	}
	for i := range out.Queues {
		tags := slices.Clone(out.Queues[i].Tags)
		r.Shuffle(len(tags), func(a, b int) { tags[a], tags[b] = tags[b], tags[a] })
		out.Queues[i].Tags = tags
	}
	return out
}

// constrained reports whether some member is not eligible for some queue.
func constrained(in Input) bool {
	for _, q := range in.Queues {
		for _, m := range in.Members {
			if !eligible(m, q) {
				return true
			}
		}
	}
	return false
}

// eligible reports whether member m offers every tag queue q requires.
func eligible(m Member, q Queue) bool {
	for _, t := range q.Tags {
		if !slices.Contains(m.Tags, t) {
			return false
		}
	}
	return true
}

// checkValid fails t unless res assigns every queue of in that has an
// eligible member to exactly one eligible member, lists every other queue as
// unassignable, and names nothing else.
func checkValid(t *testing.T, label string, in Input, res Result) {
	t.Helper()
	members := map[string]Member{}
	for _, m := range in.Members {
		members[m.Name] = m
	}
	var wantUnassignable []string
	for _, q := range in.Queues {
		anyEligible := false
		for _, m := range in.Members {
			if eligible(m, q) {
				anyEligible = true
				break
			}
		}
		owner, ok := res.Queues[q.Name]
		switch {
		case !anyEligible:
			wantUnassignable = append(wantUnassignable, q.Name)
			if ok {
				t.Fatalf("%s: queue %s has no eligible member, want unassigned, have owner %q", label, q.Name, owner)
			}
		case !ok:
			t.Fatalf("%s: queue %s has an eligible member, want an owner, have none", label, q.Name)
		case !eligible(members[owner], q):
			t.Fatalf("%s: queue %s (tags %v) went to %q (tags %v, present %v): not eligible",
				label, q.Name, q.Tags, owner, members[owner].Tags, members[owner].Name != "")
		}
	}
	if len(res.Queues) != len(in.Queues)-len(wantUnassignable) {
		t.Fatalf("%s: want %d assigned queues, have %d", label, len(in.Queues)-len(wantUnassignable), len(res.Queues))
	}
	slices.Sort(wantUnassignable)
	if !slices.Equal(res.Unassignable, wantUnassignable) {
		t.Fatalf("%s: want unassignable %v, have %v", label, wantUnassignable, res.Unassignable)
	}
}

// loads returns each member's load (sum of its queues' normalised weights).
func loads(in Input, res Result) map[string]int64 {
	weight := map[string]int64{}
	for _, q := range in.Queues {
		weight[q.Name] = clamp(q.Weight, MaxWeight)
	}
	l := map[string]int64{}
	for _, m := range in.Members {
		l[m.Name] = 0
	}
	for q, m := range res.Queues {
		l[m] += weight[q]
	}
	return l
}

// checkStickyBound fails t unless every member's load is within the sticky
// guarantee, |load − W·c/C| < w_max, checked exactly as
// |load·C − W·c| < w_max·C. Only for inputs without tag constraints.
func checkStickyBound(t *testing.T, label string, in Input, res Result) {
	t.Helper()
	var total, capacity, maxWeight int64
	for _, q := range in.Queues {
		w := clamp(q.Weight, MaxWeight)
		total += w
		maxWeight = max(maxWeight, w)
	}
	for _, m := range in.Members {
		capacity += clamp(m.Capacity, MaxCapacity)
	}
	if len(in.Queues) == 0 {
		return
	}
	l := loads(in, res)
	for _, m := range in.Members {
		c := clamp(m.Capacity, MaxCapacity)
		if d := l[m.Name]*capacity - total*c; d >= maxWeight*capacity || -d >= maxWeight*capacity {
			t.Fatalf("%s: member %s (capacity %d of %d) has load %d, want strictly within %d of the ideal %.2f",
				label, m.Name, c, capacity, l[m.Name], maxWeight, float64(total*c)/float64(capacity))
		}
	}
}

// checkCountBound fails t unless every member owns ⌊n/m⌋ or ⌈n/m⌉ queues,
// the guarantee of range and round-robin without tag constraints.
func checkCountBound(t *testing.T, label string, in Input, res Result) {
	t.Helper()
	if len(in.Members) == 0 {
		return
	}
	count := map[string]int{}
	for _, m := range res.Queues {
		count[m]++
	}
	lo := len(in.Queues) / len(in.Members)
	hi := (len(in.Queues) + len(in.Members) - 1) / len(in.Members)
	for _, m := range in.Members {
		if count[m.Name] < lo || count[m.Name] > hi {
			t.Fatalf("%s: member %s owns %d queues, want %d–%d", label, m.Name, count[m.Name], lo, hi)
		}
	}
}

func mustAssign(t testing.TB, s Strategy, in Input) Result {
	t.Helper()
	res, err := s.Assign(in)
	if err != nil {
		t.Fatalf("%s: assign: %v", s.Name(), err)
	}
	return res
}

// checkMinimalMoves fails t unless res moves exactly as many queues away from
// their previous owners as the sticky bound forces. Only for inputs without
// tag constraints and with unit weights, where member i must own between
// lo = ⌊W·cᵢ/C⌋ and hi = ⌈W·cᵢ/C⌉ queues: with P_i queues kept from before and
// O queues without a previous owner (new, or their owner left), at least
// Σ max(0, P_i − hi) queues must leave their owners and at least
// Σ max(0, lo − P_i) must arrive, so the minimum is
// O + max(Σ max(0, P_i − hi), Σ max(0, lo − P_i) − O, 0).
func checkMinimalMoves(t *testing.T, label string, in Input, res Result) {
	t.Helper()
	present := map[string]bool{}
	var capacity int64
	for _, m := range in.Members {
		present[m.Name] = true
		capacity += clamp(m.Capacity, MaxCapacity)
	}
	total := int64(len(in.Queues))
	if total == 0 || capacity == 0 {
		return
	}
	kept := map[string]int64{}
	var orphans, moved int64
	for _, q := range in.Queues {
		home := in.Previous[q.Name]
		if present[home] {
			kept[home]++
		} else {
			orphans++
		}
		if res.Queues[q.Name] != home {
			moved++
		}
	}
	var shed, need int64
	for _, m := range in.Members {
		c := clamp(m.Capacity, MaxCapacity)
		lo := total * c / capacity
		hi := (total*c + capacity - 1) / capacity
		shed += max(0, kept[m.Name]-hi)
		need += max(0, lo-kept[m.Name])
	}
	if want := orphans + max(shed, need-orphans, 0); moved != want {
		t.Fatalf("%s: want the minimum of %d moves (%d without an owner, %d to shed, %d needed), have %d",
			label, want, orphans, shed, need, moved)
	}
}
