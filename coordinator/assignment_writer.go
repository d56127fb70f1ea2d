package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// AssignmentWriter writes the assignment on behalf of the rebalance leader,
// fenced by /coord/epoch: creating it bumps the epoch, and every multi it
// sends checks the epoch is still the one this writer set, so a deposed
// leader's writes fail. It is not safe for concurrent use.
type AssignmentWriter struct {
	s            *Session
	lead         *Leadership
	epochVersion int32

	last          drover.Assignment // the complete target as last written or read
	headerVersion int32             // of /assignment
	maxGen        int64             // the highest generation in the tree
	shares        map[string]*writerShare
	stale         bool // a write failed part-way: reload before the next one
	queuesPeak    int  // the most queues last.Queues held since it was last rebuilt (shrink.Map)

	// Tests only: one operation per multi, and a hook run after each multi
	// that was applied but the last (an error stops the write there).
	oneOpPerMulti bool
	afterMulti    func(i int) error
	// Stats of the last Write.
	lastStats WriteStats
}

// WriteStats describe the requests of one assignment write.
type WriteStats struct {
	Multis       int // multis sent
	Ops          int // operations in them (epoch checks included)
	Bytes        int // estimated bytes of all requests
	LargestMulti int // estimated bytes of the largest multi
}

// writerShare is what the writer knows of one member's share in ZooKeeper.
type writerShare struct {
	exists   bool         // the share header node exists
	chunks   [][]string   // content by index, as the header names it
	gens     []int64      // the generation each chunk was written at
	nodes    map[int]bool // chunk nodes that exist
	complete bool         // the nodes hold what chunks/gens say
	// fresh marks, by index, the chunks Append added (assignment_append.go):
	// queues placed as new, which the member claims as new. Write's
	// chunks (partitioned by hash) and Move's are not.
	fresh []bool
	// filling is 1 + the index of the appended chunk the last placements
	// went into (0: none), which the next fill while they fit.
	filling int
}

// NewWriter takes over the assignment for lead (a leadership of
// this session): one multi that checks lead's candidate node still exists and
// bumps /coord/epoch, then a read of the current assignment. A share left
// half-written by a deposed leader is rewritten at once. A lost leadership
// returns an error wrapping drover.ErrNotLeader.
func (a Assignments) NewWriter(ctx context.Context, lead *Leadership) (*AssignmentWriter, error) {
	s := a.s
	if lead.e.s != s {
		return nil, fmt.Errorf("take over assignment: %w: the leadership belongs to another session", drover.ErrNotLeader)
	}
	if err := lead.Check(ctx); err != nil {
		return nil, fmt.Errorf("take over assignment: %w", err)
	}
	epochData, _ := json.Marshal(map[string]string{"leader_node": lead.node})
	res, err := bounded(ctx, s, func(c zkConn) ([]zk.MultiResponse, error) {
		return c.Multi(
			&zk.CheckVersionRequest{Path: lead.node, Version: 0},
			&zk.SetDataRequest{Path: s.path(epochNode), Data: epochData, Version: -1},
		)
	})
	if isVersionConflict(err) {
		return nil, fmt.Errorf("take over assignment: bump epoch: %w: candidate node %s is gone", drover.ErrNotLeader, lead.node)
	}
	if err != nil {
		// Unknown outcome of a bump is harmless: a new writer bumps again.
		return nil, fmt.Errorf("take over assignment: bump epoch: %w", err)
	}
	w := &AssignmentWriter{s: s, lead: lead, epochVersion: res[1].Stat.Version}
	if err := w.reload(ctx); err != nil {
		return nil, fmt.Errorf("take over assignment: %w", err)
	}
	if w.needsRepair() {
		s.log.Warn("rewriting shares left half-written by an earlier leader", "generation", w.maxGen)
		if _, err := w.Write(ctx, w.last); err != nil {
			return nil, fmt.Errorf("take over assignment: repair: %w", err)
		}
	}
	return w, nil
}

// reload reads the whole tree into the writer's state.
func (w *AssignmentWriter) reload(ctx context.Context) error {
	sa, err := w.s.readAssignmentTree(ctx)
	if err != nil {
		return err
	}
	if sa.err != nil {
		w.s.log.Warn("overwriting a corrupt assignment", "error", sa.err)
	}
	w.last = sa.assignment()
	w.headerVersion = sa.version
	w.maxGen = sa.maxGeneration()
	w.shares = map[string]*writerShare{}
	for m, st := range sa.shares {
		ws := &writerShare{exists: true, nodes: map[int]bool{}, complete: st.complete}
		for i := range st.chunks {
			ws.nodes[i] = true
		}
		if st.complete {
			ws.gens = slices.Clone(st.header.Chunks)
			ws.chunks = make([][]string, len(st.header.Chunks))
			ws.fresh = make([]bool, len(ws.chunks)) // appended chunks are not told apart: the next Append adds one
			for i := range ws.chunks {
				ws.chunks[i] = st.chunks[i].Queues
			}
		}
		w.shares[m] = ws
	}
	w.stale = false
	return nil
}

// needsRepair reports whether a share is not as its header says.
func (w *AssignmentWriter) needsRepair() bool {
	for _, ws := range w.shares {
		if !ws.complete {
			return true
		}
	}
	return false
}

// Epoch returns the /coord/epoch version this writer holds.
func (w *AssignmentWriter) Epoch() int32 { return w.epochVersion }

// Current returns the assignment as last read or written by this writer.
func (w *AssignmentWriter) Current() drover.Assignment { return w.last }

// LastWrite returns the request figures of the last successful Write.
func (w *AssignmentWriter) LastWrite() WriteStats { return w.lastStats }

// zkOp is one operation of a multi with its estimated size.
type zkOp struct {
	req  any
	size int
}

// Write stores next as the new assignment with a generation above every one
// in the tree. Only shares that changed are written, and of them only the
// chunks that changed: the requests grow with the queues moved, not with the
// queues. The write is a sequence of multis of at most maxRequestBytes, each
// checking /coord/epoch: chunks, then share headers, then deletions, then
// /assignment (conditional on its version). It returns the assignment
// written.
//
// When a newer leader has bumped the epoch (or /assignment changed behind
// this writer) it fails with an error wrapping drover.ErrFenced and
// drover.ErrNotLeader; the writer is then useless. A write cut short any
// other way (an outcome unknown, wrapping ErrOutcomeUnknown) leaves shares
// that members do not act on; the next Write reads the tree again and
// completes them. A member name that is not a valid node name, or a chunk
// larger than a request may be, fails with a clear error before anything is
// sent.
func (w *AssignmentWriter) Write(ctx context.Context, next drover.Assignment) (drover.Assignment, error) {
	if err := w.lead.Err(); err != nil {
		return drover.Assignment{}, fmt.Errorf("write assignment: %w", err)
	}
	if w.stale {
		if err := w.reload(ctx); err != nil {
			return drover.Assignment{}, fmt.Errorf("write assignment: re-read after a failed write: %w", err)
		}
	}
	s := w.s
	gen := w.maxGen + 1
	next.Generation = gen
	byMember := map[string][]string{}
	for q, m := range next.Queues {
		byMember[m] = append(byMember[m], q)
	}
	members := make([]string, 0, len(byMember))
	for m := range byMember {
		if err := validateNodeName(m); err != nil {
			return drover.Assignment{}, fmt.Errorf("write assignment generation %d: member %q: %w", gen, m, err)
		}
		members = append(members, m)
	}
	sort.Strings(members)

	var first, chunkOps, headerOps, deleteOps []zkOp
	add := func(list *[]zkOp, req any, p string, data []byte) {
		*list = append(*list, zkOp{req, requestSize(p, data)})
	}
	newShares := map[string]*writerShare{}
	for _, m := range members {
		qs := byMember[m]
		sort.Strings(qs)
		old := w.shares[m]
		n := chunkCount(qs)
		parts := partition(qs, n)
		ns := &writerShare{exists: true, chunks: parts, gens: make([]int64, n), nodes: map[int]bool{}, complete: true, fresh: make([]bool, n)}
		changed := old == nil || !old.exists || !old.complete || len(old.chunks) != n
		if old == nil || !old.exists {
			// Chunks are children of the share header: create it first,
			// as an empty share of generation 0 (nothing yet).
			p := s.sharePath(m)
			data := shareHeader{}.encode()
			add(&first, &zk.CreateRequest{Path: p, Data: data, Acl: s.acl, Flags: zk.FlagPersistent}, p, data)
		}
		for i, part := range parts {
			ns.nodes[i] = true
			if old != nil && old.complete && len(old.chunks) == n && old.nodes[i] && slices.Equal(old.chunks[i], part) {
				ns.gens[i] = old.gens[i]
				continue
			}
			changed = true
			ns.gens[i] = gen
			p := s.chunkPath(m, i)
			data := ShareChunk{Generation: gen, Queues: nonNil(part), New: w.allNew(part)}.encode()
			if old != nil && old.nodes[i] {
				add(&chunkOps, &zk.SetDataRequest{Path: p, Data: data, Version: -1}, p, data)
			} else {
				add(&chunkOps, &zk.CreateRequest{Path: p, Data: data, Acl: s.acl, Flags: zk.FlagPersistent}, p, data)
			}
		}
		if old != nil {
			for i := range old.nodes {
				if i >= n {
					changed = true
					p := s.chunkPath(m, i)
					add(&deleteOps, &zk.DeleteRequest{Path: p, Version: -1}, p, nil)
				}
			}
		}
		if changed {
			p := s.sharePath(m)
			data := shareHeader{Generation: gen, Chunks: ns.gens, Queues: len(qs)}.encode()
			add(&headerOps, &zk.SetDataRequest{Path: p, Data: data, Version: -1}, p, data)
		}
		newShares[m] = ns
	}
	// Shares that became empty get an empty header (their member must see
	// it); shares already empty are removed.
	for m, old := range w.shares {
		if newShares[m] != nil || !old.exists {
			continue
		}
		p := s.sharePath(m)
		wasEmpty := old.complete && len(old.chunks) == 0
		for i := range old.nodes {
			cp := s.chunkPath(m, i)
			add(&deleteOps, &zk.DeleteRequest{Path: cp, Version: -1}, cp, nil)
		}
		if wasEmpty {
			add(&deleteOps, &zk.DeleteRequest{Path: p, Version: -1}, p, nil)
			continue
		}
		data := shareHeader{Generation: gen, Chunks: []int64{}}.encode()
		add(&headerOps, &zk.SetDataRequest{Path: p, Data: data, Version: -1}, p, data)
		newShares[m] = &writerShare{exists: true, nodes: map[int]bool{}, complete: true}
	}
	hp := s.path(assignmentNode)
	hdata := mustJSON(assignmentHeader{Generation: gen, Strategy: next.Strategy, Leader: next.Leader, Members: len(members), Queues: len(next.Queues)})
	headerOp := zkOp{&zk.SetDataRequest{Path: hp, Data: hdata, Version: w.headerVersion}, requestSize(hp, hdata)}

	ops := slices.Concat(first, chunkOps, headerOps, deleteOps, []zkOp{headerOp})
	stats, err := w.send(ctx, gen, ops)
	if err != nil {
		return drover.Assignment{}, err
	}
	w.shares = newShares
	w.maxGen = gen
	w.last = next
	w.lastStats = stats
	return next, nil
}

// allNew reports whether no queue of a chunk was in the assignment this
// writer last wrote or read: a chunk of a fleet's first assignment, where
// no queue was ever claimed. It is then marked New, as an appended chunk
// is, so that its member claims without reading each offset first
// (Owner.New): at a million queues that read was a third of the start's
// requests (docs/decisions.md, "Issue 43: a million keys"). A queue that
// has an offset after all (an assignment deleted by hand) costs one failed
// multi and then the usual claim.
func (w *AssignmentWriter) allNew(chunk []string) bool {
	for _, q := range chunk {
		if _, ok := w.last.Queues[q]; ok {
			return false
		}
	}
	return len(chunk) > 0
}

// send writes generation gen's ops, which end with the conditional write
// of /assignment, as multis each starting with the epoch check, and keeps
// /assignment's new version. A write that fails leaves the writer stale
// (see Write for the errors).
func (w *AssignmentWriter) send(ctx context.Context, gen int64, ops []zkOp) (WriteStats, error) {
	s := w.s
	multis, err := w.pack(ops)
	if err != nil {
		return WriteStats{}, fmt.Errorf("write assignment generation %d: %w", gen, err)
	}
	stats := WriteStats{Multis: len(multis)}
	for i, m := range multis {
		size := 0
		for _, op := range m {
			size += op.size
		}
		stats.Ops += len(m)
		stats.Bytes += size
		stats.LargestMulti = max(stats.LargestMulti, size)
		reqs := make([]any, len(m))
		for k, op := range m {
			reqs[k] = op.req
		}
		last := i == len(multis)-1
		res, err := bounded(ctx, s, func(c zkConn) ([]zk.MultiResponse, error) { return c.Multi(reqs...) })
		if err == nil && w.afterMulti != nil && !last {
			err = w.afterMulti(i)
			if err != nil {
				w.stale = true
				return WriteStats{}, fmt.Errorf("write assignment generation %d: cut after multi %d of %d: %w", gen, i+1, len(multis), err)
			}
		}
		if err == nil {
			if last {
				w.headerVersion = res[len(res)-1].Stat.Version
			}
			continue
		}
		w.stale = true
		fenced := len(res) > 0 && isVersionConflict(res[0].Error)
		headerMoved := last && len(res) > 0 && isVersionConflict(res[len(res)-1].Error)
		switch {
		case fenced || headerMoved || (len(res) == 0 && isVersionConflict(err)):
			return WriteStats{}, fmt.Errorf("write assignment generation %d: %w: %w (epoch %d is no longer current, or the assignment changed behind this writer)",
				gen, drover.ErrFenced, drover.ErrNotLeader, w.epochVersion)
		case isUnknownOutcome(err):
			return WriteStats{}, fmt.Errorf("write assignment generation %d: multi %d of %d: %w: %w", gen, i+1, len(multis), ErrOutcomeUnknown, err)
		default:
			return WriteStats{}, fmt.Errorf("write assignment generation %d: multi %d of %d: %w", gen, i+1, len(multis), err)
		}
	}
	return stats, nil
}

// pack cuts ops, in order, into multis of at most batchBytes, each
// starting with the epoch check.
func (w *AssignmentWriter) pack(ops []zkOp) ([][]zkOp, error) {
	ep := w.s.path(epochNode)
	check := zkOp{&zk.CheckVersionRequest{Path: ep, Version: w.epochVersion}, requestSize(ep, nil)}
	var out [][]zkOp
	size := 0
	for _, op := range ops {
		if op.size+check.size > maxRequestBytes {
			return nil, fmt.Errorf("%w: one operation of %d bytes", ErrTooLarge, op.size)
		}
		if len(out) == 0 || size+op.size > batchBytes || w.oneOpPerMulti {
			out = append(out, []zkOp{check})
			size = check.size
		}
		out[len(out)-1] = append(out[len(out)-1], op)
		size += op.size
	}
	return out, nil
}

func nonNil(qs []string) []string {
	if qs == nil {
		return []string{}
	}
	return qs
}
