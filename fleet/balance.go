package fleet

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/rebalance"
)

// Balance after removals is restored later, paced, by idle moves
// (docs/decisions.md, "Issue 40: removals are placement; balance is
// corrected, paced, by idle moves"). Removals taken out without computing
// (placement.go) can leave a member outside Sticky's balance bound: a
// whole computation would then move queues. The leader does not compute
// at each removal, a dozen times a second while a family retires; it
// makes one bounded correction no sooner than BalanceEvery after the
// previous one. The correction moves as many queues as Sticky would, from
// the members above their targets to those below, but chooses which:
// queues with nothing running and no backlog (Activity), examined in an
// order seeded by the generation (never name order), a batch of
// candidates per round trip. A member with no idle queue to give keeps
// its busy ones until the next correction.

// DefaultBalanceEvery is RebalancerConfig.BalanceEvery's default.
const DefaultBalanceEvery = 10 * time.Second

const (
	// probeBatch is the fewest candidates a donor has examined in one
	// round trip: a probe of a few hundred queues costs Redis little, and
	// each round trip held the leader's loop (new keys wait for it) a few
	// milliseconds more on a loaded machine.
	probeBatch = 256
	// probeLimit bounds the candidates one correction examines, beyond
	// 16 per queue to move.
	probeLimit = 4096
	// probeTimeout bounds the correction's wait on Activity.
	probeTimeout = 5 * time.Second
)

// donorWeight is a member giving queues of one weight away.
type donorWeight struct {
	member string
	weight int64
}

// correct makes one correction of the assignment in force: it writes the
// moves Sticky would make, each of a queue Activity found idle (any queue
// in the seeded order when activity is nil), and returns how many queues
// moved. It moves nothing and returns 0 when no member is out of the
// bound, or no donor has an idle queue.
func (p *placement) correct(ctx context.Context, lead Leadership, w AssignmentWriter, cfg RebalancerConfig, live []rebalance.Member, log hclog.Logger) (int, error) {
	if n, ok, err := p.correctMoves(ctx, lead, w, cfg, live, log); ok {
		return n, err
	}
	return p.correctWhole(ctx, lead, w, cfg, live, log)
}

// correctMoves is the correction computed from the loads the placement
// keeps, as a change of members is (placeMembers): Placer.Reassign, over a
// copy of the loads and the same members, gives the moves Sticky's repair
// pass would make, by donor and weight; the donors' idle queues of those
// weights stand for the queues it chose (the loads, and so the balance,
// are the same), and only they are written (Move). Its work grows with the
// queues moved: the whole computation it replaces, two Sticky runs and a
// whole write, held the leader's loop about 1.5 s at 110,000 queues, every
// BalanceEvery while a family churned, and new keys waited for it. false:
// it cannot stand for Sticky here (no placer, tags, a writer that cannot
// move); the whole computation then corrects. Queues placed ahead of the
// registry watch (a churning family's newest keys) count as placed: they
// are in the loads and the assignment, and are not candidates to move.
func (p *placement) correctMoves(ctx context.Context, lead Leadership, w AssignmentWriter, cfg RebalancerConfig, live []rebalance.Member, log hclog.Logger) (int, bool, error) {
	mw, ok := w.(mover)
	if !ok || p.placer == nil || membersKey(live) != p.members {
		return 0, false, nil
	}
	cur := w.Current()
	start := time.Now()
	plan, _, ok := p.placer.Clone().Reassign(live, cur.Queues, p.lookup, p.maxWeight())
	if !ok {
		return 0, false, nil
	}
	// The receivers of each donor's moves, by weight, in an order that
	// does not depend on the map's.
	receivers := map[donorWeight][]string{}
	for _, q := range slices.Sorted(maps.Keys(plan)) {
		from, to := cur.Queues[q], plan[q]
		rq, ok := p.lookup(q)
		if !ok || from == "" || from == to {
			continue
		}
		k := donorWeight{from, rebalance.Weight(rq)}
		receivers[k] = append(receivers[k], to)
	}
	if len(receivers) == 0 {
		return 0, true, nil
	}
	need := map[donorWeight]int{}
	for k, rs := range receivers {
		need[k] = len(rs)
	}
	cands := p.candidates(cur, need)
	idle, examined, err := p.findIdle(ctx, cfg.Activity, need, cands)
	if err != nil {
		return 0, true, err
	}
	moved := map[string]string{}
	kept := map[string]int{} // donor → moves left for want of idle queues
	for k, rs := range receivers {
		i := 0
		for _, q := range cands[k] {
			if i == len(rs) {
				break
			}
			if idle[q] {
				moved[q] = rs[i]
				i++
			}
		}
		kept[k.member] += len(rs) - i
	}
	compute := time.Since(start)
	for _, m := range slices.Sorted(maps.Keys(kept)) {
		if kept[m] > 0 {
			log.Info("a member above its share has too few idle queues to give; it keeps its busy ones until the next correction",
				"member", m, "kept", kept[m], "examined", examined)
		}
	}
	if len(moved) == 0 {
		return 0, true, nil
	}
	actx, cancel, err := lead.Act(ctx)
	if err != nil {
		return 0, true, err
	}
	defer cancel()
	wstart := time.Now()
	written, err := mw.Move(actx, moved)
	if err != nil {
		p.forget()
		return 0, true, fmt.Errorf("write the correction: %w", err)
	}
	for q, to := range moved {
		rq, _ := p.reg.Lookup(q)
		p.placer.Move(balancing(rq), cur.Queues[q], to)
	}
	log.Info("balance corrected", "generation", written.Generation, "moved", len(moved), "examined", examined,
		"compute", compute, "write", time.Since(wstart))
	return len(moved), true, nil
}

// candidates returns, for each donor and weight of need, the first of the
// donor's queues of that weight in an order seeded by the assignment's
// generation: unrelated to names, and new at each correction. It keeps at
// most examineLimit(need) a donor and weight, as many as findIdle may
// examine: the donors hold most of the registry, and sorting all of it
// (47,000 queues a donor at 190,000) at each correction held the leader's
// loop, and the new keys waiting on it, for a large part of the
// correction's 0.2–0.8 s.
func (p *placement) candidates(cur drover.Assignment, need map[donorWeight]int) map[donorWeight][]string {
	type ranked struct {
		rank uint64
		name string
	}
	order := func(a, b ranked) int {
		if a.rank != b.rank {
			if a.rank < b.rank {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	}
	keep := examineLimit(need)
	byKey := map[donorWeight][]ranked{}
	worst := map[donorWeight]ranked{} // once cut, the last one kept
	for q := range p.reg.All() {
		k := donorWeight{cur.Queues[q.Name], rebalance.Weight(balancing(q))}
		if need[k] <= 0 {
			continue
		}
		r := ranked{seededRank(cur.Generation, q.Name), q.Name}
		if w, cut := worst[k]; cut && order(r, w) >= 0 {
			continue // not among the first keep
		}
		rs := append(byKey[k], r)
		if len(rs) >= 2*keep {
			slices.SortFunc(rs, order)
			rs = rs[:keep]
			worst[k] = rs[keep-1]
		}
		byKey[k] = rs
	}
	cands := make(map[donorWeight][]string, len(byKey))
	for k, rs := range byKey {
		slices.SortFunc(rs, order)
		rs = rs[:min(len(rs), keep)]
		qs := make([]string, len(rs))
		for i, r := range rs {
			qs[i] = r.name
		}
		cands[k] = qs
	}
	return cands
}

// examineLimit is how many candidates one correction examines at most.
func examineLimit(need map[donorWeight]int) int {
	total := 0
	for _, n := range need {
		total += n
	}
	return max(probeLimit, 16*total)
}

// correctWhole is the correction by whole computations: Sticky over the
// assignment in force for the moves it would make, the donors' idle queues
// found, Sticky again with them as hints, and the result written whole.
func (p *placement) correctWhole(ctx context.Context, lead Leadership, w AssignmentWriter, cfg RebalancerConfig, live []rebalance.Member, log hclog.Logger) (int, error) {
	cur := w.Current()
	in := rebalance.Input{Previous: cur.Queues, Members: live, Source: registryQueues{p.reg}}
	start := time.Now()
	plan, err := rebalance.Sticky{}.Assign(in)
	if err != nil {
		return 0, fmt.Errorf("plan the correction: %w", err)
	}
	need := map[donorWeight]int{}
	for _, mv := range rebalance.Moves(cur.Queues, plan.Queues) {
		if !mv.Handover() {
			continue // a queue the assignment lacks or the registry no longer lists: not a correction's
		}
		if q, ok := p.reg.Lookup(mv.Queue); ok {
			need[donorWeight{mv.From, rebalance.Weight(balancing(q))}]++
		}
	}
	if len(need) == 0 {
		return 0, nil
	}
	cands := p.candidates(cur, need)
	idle, examined, err := p.findIdle(ctx, cfg.Activity, need, cands)
	if err != nil {
		return 0, err
	}
	in.Idle = idle
	res, err := rebalance.Sticky{}.Assign(in)
	if err != nil {
		return 0, fmt.Errorf("compute the correction: %w", err)
	}
	compute := time.Since(start)
	next := maps.Clone(cur.Queues)
	var moves []rebalance.Move
	kept := map[string]int{} // donor → busy queues Sticky chose and the correction left
	for _, mv := range rebalance.Moves(cur.Queues, res.Queues) {
		if !mv.Handover() {
			continue
		}
		if cfg.Activity != nil && !idle[mv.Queue] {
			kept[mv.From]++
			continue
		}
		next[mv.Queue] = mv.To
		moves = append(moves, mv)
	}
	for _, m := range slices.Sorted(maps.Keys(kept)) {
		log.Info("a member above its share has too few idle queues to give; it keeps its busy ones until the next correction",
			"member", m, "kept", kept[m], "examined", examined)
	}
	if len(moves) == 0 {
		return 0, nil
	}
	actx, cancel, err := lead.Act(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	wstart := time.Now()
	written, err := w.Write(actx, drover.Assignment{Strategy: cfg.Strategy.Name(), Leader: cfg.Candidate, Queues: next})
	if err != nil {
		p.forget()
		return 0, fmt.Errorf("write the correction: %w", err)
	}
	for _, mv := range moves {
		q, _ := p.reg.Lookup(mv.Queue)
		p.placer.Move(balancing(q), mv.From, mv.To)
	}
	log.Info("balance corrected", "generation", written.Generation, "moved", len(moves), "examined", examined,
		"compute", compute, "write", time.Since(wstart))
	return len(moves), nil
}

// findIdle examines the candidates of each donor weight, in order, in one
// NonEmpty round trip per batch, until it has as many idle queues as need
// asks or probeLimit candidates were examined. With no activity it takes
// the first candidates as they come. It returns the idle queues and how
// many candidates it examined.
func (p *placement) findIdle(ctx context.Context, activity Activity, need map[donorWeight]int, cands map[donorWeight][]string) (map[string]bool, int, error) {
	idle := map[string]bool{}
	keys := slices.SortedFunc(maps.Keys(need), func(a, b donorWeight) int {
		if c := strings.Compare(a.member, b.member); c != 0 {
			return c
		}
		return int(a.weight - b.weight)
	})
	if activity == nil {
		for _, k := range keys {
			for _, q := range cands[k][:min(need[k], len(cands[k]))] {
				idle[q] = true
			}
		}
		return idle, 0, nil
	}
	limit := examineLimit(need)
	found, next := map[donorWeight]int{}, map[donorWeight]int{}
	examined := 0
	for examined < limit {
		var batch []string
		var of []donorWeight
		for _, k := range keys {
			short := need[k] - found[k]
			if short <= 0 {
				continue
			}
			take := min(len(cands[k])-next[k], max(2*short, probeBatch))
			batch = append(batch, cands[k][next[k]:next[k]+take]...)
			for range take {
				of = append(of, k)
			}
			next[k] += take
		}
		if len(batch) == 0 {
			break
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		busy, err := activity.NonEmpty(pctx, batch)
		cancel()
		if err != nil {
			return nil, examined, fmt.Errorf("find idle queues to move: %w", err)
		}
		if len(busy) != len(batch) {
			return nil, examined, fmt.Errorf("find idle queues to move: %d answers for %d queues", len(busy), len(batch))
		}
		for i, q := range batch {
			if !busy[i] {
				idle[q] = true
				found[of[i]]++
			}
		}
		examined += len(batch)
	}
	return idle, examined, nil
}

// seededRank orders a donor's candidates: the FNV-1a 64 hash of the seed
// (8 bytes, little-endian) and the name, computed in place (hash/fnv's
// hasher is an allocation a queue, 190,000 of them a correction).
func seededRank(seed int64, name string) uint64 {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for i := range 8 {
		h ^= uint64(byte(uint64(seed) >> (8 * i)))
		h *= prime64
	}
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= prime64
	}
	return h
}
