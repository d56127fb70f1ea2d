package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/rebalance"
)

// New queues are placed, not rebalanced (docs/decisions.md, "Family queues:
// new queues are placed, not rebalanced"), and removed queues are taken
// out the same way (docs/decisions.md, "Issue 40: removals are placement;
// balance is corrected, paced, by idle moves"). When the only changes
// since the last target are queues added to or removed from the registry —
// a queue family's first enqueues and its retirements, a thousand a second
// — the leader places the new ones beside the assignment with
// rebalance.Placer, as Sticky would place them, takes the removed ones off
// their owners' loads (Placer.Remove), and writes both in one Update that
// touches only the chunks those queues live in: the cost grows with the
// queues changed, where a whole computation and write grow with the queues
// registered (at 100,000 queues, up to 1.5 s and 1.2 MB a generation), and
// a removal moves nothing. Removals can leave a member outside Sticky's
// balance bound; balance.go corrects that later, paced, by moving idle
// queues. A member that comes or goes or changes, with the registry
// unchanged, is written as the queues that move (placeMembers: Sticky's
// passes over the queues of the members gone and each donor's surplus,
// rebalance.Placer.Reassign). Anything else — a queue re-weighted, a queue
// that requires tags, a member that offers tags, another strategy than
// sticky, a new leadership term — goes through the whole computation,
// which is also what folds the appended and moved chunks back.

// placement is what the leader places new queues by: the registry the
// assignment reflects, the members it was computed for, and the members'
// loads.
type placement struct {
	reg     coordinator.Registry
	members string            // membersKey of the members
	placer  *rebalance.Placer // nil: the next change needs a whole computation
	// unlisted are the queues placed from the registrar that no registry
	// snapshot has listed yet, with when and as placed.
	unlisted map[string]unlistedQueue
	// weights counts the assigned queues by weight (rebalance.Weight):
	// the largest is Sticky's balance bound.
	weights map[int64]int
	// deferred are queues removed from the registry while new ones were
	// being placed, not yet taken out of the assignment (removals.go), as
	// the registry listed them; deferredSince is when the first came.
	deferred      map[string]rebalance.Queue
	deferredSince time.Time
	// placedAt is when new queues were last placed (by the registry
	// watch or ahead of it, from the registrar).
	placedAt time.Time
	// onRemoved, if set, is told how many queues each write removed.
	onRemoved func(n int)
	// onReassign, if set, is told what each change of members computed
	// without a whole computation (tests).
	onReassign func(rebalance.ReassignStats)
}

// unlistedQueue is a queue placed ahead of the registry watch: when, and
// as the placer counted it.
type unlistedQueue struct {
	at time.Time
	q  rebalance.Queue
}

// lookup is a queue as the strategies see it: as the registry the
// assignment reflects lists it, or as placed ahead of it.
func (p *placement) lookup(name string) (rebalance.Queue, bool) {
	if q, ok := p.reg.Lookup(name); ok {
		return balancing(q), true
	}
	u, ok := p.unlisted[name]
	return u.q, ok
}

// forget makes the next change go through a whole computation.
func (p *placement) forget() { p.placer, p.unlisted, p.deferred = nil, nil, nil }

// learn records that assigned (queue → member), computed by strategy over
// members and reg, is the assignment in force.
func (p *placement) learn(strategy rebalance.Strategy, members []rebalance.Member, reg coordinator.Registry, assigned map[string]string) {
	p.forget()
	if strategy.Name() != rebalance.StickyName {
		return
	}
	load, weights := map[string]int64{}, map[int64]int{}
	for q := range reg.All() {
		if m, ok := assigned[q.Name]; ok {
			w := rebalance.Weight(balancing(q))
			load[m] += w
			weights[w]++
		}
	}
	p.reg, p.members, p.placer, p.weights = reg, membersKey(members), rebalance.NewPlacer(members, load), weights
}

// balancing is q as the strategies see it.
func balancing(q coordinator.RegisteredQueue) rebalance.Queue {
	return rebalance.Queue{Name: q.Name, Weight: q.Weight, Tags: q.Tags}
}

// maxWeight is the largest weight of the assigned queues.
func (p *placement) maxWeight() int64 {
	var top int64
	for w, n := range p.weights {
		if n > 0 {
			top = max(top, w)
		}
	}
	return top
}

// balanced reports whether the assignment in force is within Sticky's
// balance bound (a whole computation would move nothing); true when
// there is no placer (nothing to correct by: a whole computation is due).
func (p *placement) balanced() bool {
	return p.placer == nil || p.placer.Balanced(p.maxWeight())
}

// membersKey identifies a member list by what balancing reads of it.
func membersKey(members []rebalance.Member) string {
	keys := make([]string, len(members))
	for i, m := range members {
		keys[i] = fmt.Sprintf("%s/%d/%s", m.Name, m.Capacity, strings.Join(m.Tags, ","))
	}
	slices.Sort(keys)
	return strings.Join(keys, "\x00")
}

// placeNew places the queues added to the registry since the assignment
// in force and takes out the queues removed from it, when nothing else
// changed, in one write. It reports false when the change needs a whole
// computation (nothing was done), true when it handled the change; err is
// then the write's failure, after which the next change goes through a
// whole computation.
func (p *placement) placeNew(ctx context.Context, now time.Time, lead Leadership, w AssignmentWriter, live []rebalance.Member, reg coordinator.Registry, log hclog.Logger) (bool, error) {
	if p.placer == nil || membersKey(live) != p.members {
		return false, nil
	}
	d := reg.Diff(p.reg)
	if len(d.Changed) > 0 {
		return false, nil
	}
	for _, q := range d.Added {
		delete(p.unlisted, q.Name)
	}
	for _, u := range p.unlisted {
		if now.Sub(u.at) > pendingFor {
			// Placed from the registrar, never listed: retired since, or
			// never registered. A whole computation drops it.
			return false, nil
		}
	}
	added := make([]rebalance.Queue, 0, len(d.Added))
	placing := false // a queue added is not assigned yet
	cur := w.Current().Queues
	for _, q := range d.Added {
		added = append(added, balancing(q))
		if _, ok := cur[q.Name]; !ok {
			placing = true
		}
		// Registered again before its removal was written: it stays
		// where it is (and in the loads).
		delete(p.deferred, q.Name)
	}
	// The removed queues, as the snapshot the assignment reflects lists
	// them (their weights are in the loads), wait for the next removals'
	// write.
	for _, name := range d.Removed {
		if q, ok := p.reg.Lookup(name); ok {
			p.deferRemoval(now, balancing(q))
		}
	}
	if placing {
		p.placedAt = now
	}
	handled, err := p.update(ctx, lead, w, added, p.dueRemovals(now, false), log)
	if handled {
		p.reg = reg
	}
	return handled, err
}

// placeCreated places queues the registrar has just created, ahead of the
// registry watch, when the assignment in force was computed for live and
// the registry does not list them yet (then the watch places them, by what
// it lists). It does nothing when a whole computation is due.
func (p *placement) placeCreated(ctx context.Context, now time.Time, lead Leadership, w AssignmentWriter, live []rebalance.Member, reg coordinator.Registry, cfgs []drover.QueueConfig, log hclog.Logger) error {
	if p.placer == nil || membersKey(live) != p.members {
		return nil
	}
	added := make([]rebalance.Queue, 0, len(cfgs))
	for _, c := range cfgs {
		if !reg.Has(c.Name) {
			added = append(added, rebalance.FromQueueConfig(c))
		}
	}
	if len(added) > 0 {
		p.placedAt = now
	}
	if _, err := p.update(ctx, lead, w, added, nil, log); err != nil {
		return err
	}
	if p.placer != nil {
		if p.unlisted == nil {
			p.unlisted = map[string]unlistedQueue{}
		}
		for _, q := range added {
			if _, ok := w.Current().Queues[q.Name]; ok {
				p.unlisted[q.Name] = unlistedQueue{at: now, q: q}
			}
		}
	}
	return nil
}

// update places the queues of added not assigned yet, takes the assigned
// queues of removed off their owners, and writes both in one Update. It
// reports false when a queue added requires tags (nothing was done).
func (p *placement) update(ctx context.Context, lead Leadership, w AssignmentWriter, added, removed []rebalance.Queue, log hclog.Logger) (bool, error) {
	cur := w.Current().Queues
	fresh := added[:0:0]
	for _, q := range added {
		if _, ok := cur[q.Name]; !ok {
			if len(q.Tags) > 0 {
				return false, nil // the Placer refuses it: a whole computation
			}
			fresh = append(fresh, q)
		}
	}
	start := time.Now()
	var gone []string
	for _, q := range removed {
		if m, ok := cur[q.Name]; ok {
			p.placer.Remove(m, q)
			p.weights[rebalance.Weight(q)]--
			gone = append(gone, q.Name)
		}
	}
	placed, ok := p.placer.Place(fresh)
	if !ok {
		p.forget() // cannot happen (tags refused above); the loads are spent
		return false, nil
	}
	for _, q := range fresh {
		p.weights[rebalance.Weight(q)]++
	}
	compute := time.Since(start)
	if len(placed) == 0 && len(gone) == 0 {
		return true, nil
	}
	actx, cancel, err := lead.Act(ctx)
	if err != nil {
		p.forget()
		return true, err
	}
	defer cancel()
	wstart := time.Now()
	next, err := w.Update(actx, placed, gone)
	if err != nil {
		p.forget()
		return true, fmt.Errorf("place %d new queues and remove %d: %w", len(placed), len(gone), err)
	}
	// Not a rebalance (OnRebalance, the rebalances metric): nothing moved.
	log.Debug("queues placed and removed", "generation", next.Generation, "placed", len(placed), "removed", len(gone),
		"queues", len(next.Queues), "compute", compute, "write", time.Since(wstart))
	if p.onRemoved != nil && len(gone) > 0 {
		p.onRemoved(len(gone))
	}
	return true, nil
}

// mover is an AssignmentWriter that writes a change of members as the
// queues that move (coordinator.AssignmentWriter.Move).
type mover interface {
	Move(ctx context.Context, moved map[string]string) (drover.Assignment, error)
}

// The ZooKeeper writer moves: without it every change of members would
// silently go back to the whole computation.
var _ mover = (*coordinator.AssignmentWriter)(nil)

// placeMembers writes a change of members (a member joins, leaves, crashes
// or is cut off from Redis) as the queues that move, computed by
// Placer.Reassign from the loads the placement keeps, when nothing else
// changed: the leader's work grows with the queues moved, not with the
// queues registered (docs/decisions.md, "Issue 43: a join moves what it
// needs"). It reports false when the change needs a whole computation
// (nothing was done): no placer, the registry changed too, queues placed
// ahead of the registry watch are pending, or Reassign cannot stand for
// Sticky. It reports true when it handled the change; err is then the
// write's failure, after which the next change goes through a whole
// computation. Members in cutOff (unreachable from Redis) are not in
// live: their queues move as a leaver's do.
func (p *placement) placeMembers(ctx context.Context, lead Leadership, w AssignmentWriter, cfg RebalancerConfig, live []rebalance.Member, cutOff []string, reg coordinator.Registry, log hclog.Logger) (bool, error) {
	mw, ok := w.(mover)
	if !ok || p.placer == nil || len(live) == 0 || len(p.unlisted) > 0 || len(p.deferred) > 0 || cfg.Strategy.Name() != rebalance.StickyName {
		return false, nil
	}
	if d := reg.Diff(p.reg); len(d.Added) > 0 || len(d.Removed) > 0 || len(d.Changed) > 0 {
		return false, nil
	}
	cur := w.Current()
	start := time.Now()
	lookup := func(name string) (rebalance.Queue, bool) {
		q, ok := p.reg.Lookup(name)
		return balancing(q), ok
	}
	moved, stats, ok := p.placer.Reassign(live, cur.Queues, lookup, p.maxWeight())
	if !ok {
		return false, nil
	}
	p.members = membersKey(live)
	compute := time.Since(start)
	if len(cutOff) > 0 {
		log.Warn("members that cannot reach Redis get no queues", "members", cutOff)
	}
	if p.onReassign != nil {
		p.onReassign(stats)
	}
	if len(moved) == 0 {
		return true, nil
	}
	handed := 0
	for q, to := range moved {
		if from := cur.Queues[q]; from != to {
			handed++
		}
	}
	actx, cancel, err := lead.Act(ctx)
	if err != nil {
		p.forget()
		return true, err
	}
	defer cancel()
	wstart := time.Now()
	next, err := mw.Move(actx, moved)
	if err != nil {
		p.forget()
		return true, fmt.Errorf("move %d queues for a change of members: %w", len(moved), err)
	}
	log.Info("assignment written for a change of members", "generation", next.Generation, "members", len(live),
		"queues", len(next.Queues), "moved", handed, "examined", stats.Examined, "compute", compute, "write", time.Since(wstart))
	if cfg.OnRebalance != nil {
		cfg.OnRebalance(next, handed, compute)
	}
	return true, nil
}
