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
// new queues are placed, not rebalanced"). When the only change since the
// last target is queues added to the registry — a queue family's first
// enqueues, a thousand a second — the leader places them beside the
// assignment with rebalance.Placer, as Sticky would place them, and
// appends them to the shares (AssignmentWriter.Append): the cost grows
// with the queues added, where a whole computation and write grow with the
// queues registered (at 100,000 queues, up to 1.5 s and 1.2 MB a
// generation). Anything else — a member that comes or goes or changes, a
// queue removed or re-weighted, a queue that requires tags, another
// strategy than sticky — goes through the whole computation, which is
// also what folds the appended chunks back.

// placement is what the leader places new queues by: the registry the
// assignment reflects, the members it was computed for, and the members'
// loads.
type placement struct {
	reg     coordinator.Registry
	members string            // membersKey of the members
	placer  *rebalance.Placer // nil: the next change needs a whole computation
	// unlisted are the queues placed from the registrar that no registry
	// snapshot has listed yet, with when.
	unlisted map[string]time.Time
}

// forget makes the next change go through a whole computation.
func (p *placement) forget() { p.placer, p.unlisted = nil, nil }

// learn records that assigned (queue → member), computed by strategy over
// members and reg, is the assignment in force.
func (p *placement) learn(strategy rebalance.Strategy, members []rebalance.Member, reg coordinator.Registry, assigned map[string]string) {
	p.forget()
	if strategy.Name() != rebalance.StickyName {
		return
	}
	load := map[string]int64{}
	for q := range reg.All() {
		if m, ok := assigned[q.Name]; ok {
			load[m] += rebalance.Weight(rebalance.Queue{Name: q.Name, Weight: q.Weight})
		}
	}
	p.reg, p.members, p.placer = reg, membersKey(members), rebalance.NewPlacer(members, load)
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
// in force, when nothing else changed, and appends them. It reports false
// when the change needs a whole computation (nothing was done), true when
// it handled the change; err is then the append's failure, after which the
// next change goes through a whole computation.
func (p *placement) placeNew(ctx context.Context, now time.Time, lead Leadership, w AssignmentWriter, live []rebalance.Member, reg coordinator.Registry, log hclog.Logger) (bool, error) {
	if p.placer == nil || membersKey(live) != p.members {
		return false, nil
	}
	d := reg.Diff(p.reg)
	if len(d.Removed) > 0 || len(d.Changed) > 0 {
		return false, nil
	}
	for _, q := range d.Added {
		delete(p.unlisted, q.Name)
	}
	for _, at := range p.unlisted {
		if now.Sub(at) > pendingFor {
			// Placed from the registrar, never listed: retired since, or
			// never registered. A whole computation drops it.
			return false, nil
		}
	}
	added := make([]rebalance.Queue, 0, len(d.Added))
	for _, q := range d.Added {
		added = append(added, rebalance.Queue{Name: q.Name, Weight: q.Weight, Tags: q.Tags})
	}
	handled, err := p.appendNew(ctx, lead, w, added, log)
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
	if _, err := p.appendNew(ctx, lead, w, added, log); err != nil {
		return err
	}
	if p.placer != nil {
		if p.unlisted == nil {
			p.unlisted = map[string]time.Time{}
		}
		for _, q := range added {
			if _, ok := w.Current().Queues[q.Name]; ok {
				p.unlisted[q.Name] = now
			}
		}
	}
	return nil
}

// appendNew places the queues of added not assigned yet and appends them.
// It reports false when one requires tags (nothing was done).
func (p *placement) appendNew(ctx context.Context, lead Leadership, w AssignmentWriter, added []rebalance.Queue, log hclog.Logger) (bool, error) {
	cur := w.Current().Queues
	fresh := added[:0:0]
	for _, q := range added {
		if _, ok := cur[q.Name]; !ok {
			fresh = append(fresh, q)
		}
	}
	start := time.Now()
	placed, ok := p.placer.Place(fresh)
	if !ok {
		return false, nil
	}
	compute := time.Since(start)
	if len(placed) == 0 {
		return true, nil
	}
	actx, cancel, err := lead.Act(ctx)
	if err != nil {
		p.forget()
		return true, err
	}
	defer cancel()
	wstart := time.Now()
	next, err := w.Append(actx, placed)
	if err != nil {
		p.forget()
		return true, fmt.Errorf("append %d new queues: %w", len(placed), err)
	}
	// Not a rebalance (OnRebalance, the rebalances metric): nothing moved.
	log.Debug("new queues placed", "generation", next.Generation, "placed", len(placed), "queues", len(next.Queues), "compute", compute, "write", time.Since(wstart))
	return true, nil
}
