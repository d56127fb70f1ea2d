package coordinator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/shrink"
)

// Queues new to the fleet (a queue family's, at a thousand a second) are
// added to the assignment by Append, and queues retired taken out of it by
// Remove (both Update), not by Write: Write puts a queue in
// chunk fnv32a(queue) mod n of its share, so a second's new queues land in
// every chunk of every share and each generation rewrote the whole
// assignment (about 1.2 MB at 100,000 queues, docs/decisions.md "Family
// queues: new queues are placed, not rebalanced"). Append writes a share's
// new queues to the chunk after its hashed ones instead: the last appended
// chunk while it stays under appendChunkBytes, else a new one. A reader
// needs nothing new: a share is the union of the chunks its header names,
// and a member reads only the chunks whose generation moved. The next
// Write folds the appended chunks back into the hashed ones.

const (
	// appendChunkBytes is what an appended chunk is filled to before the
	// next one starts: an append rewrites at most this much per share.
	appendChunkBytes = 32 << 10
	// maxAppendedChunks bounds the appended chunks of a share: past it,
	// with none of them with room, Append rewrites the assignment with
	// Write (a member that starts reads every chunk of its share). A
	// churning share reuses the chunks its retirements empty, so it needs
	// about as many as its live queues fill (25,000 new queues a share
	// are 13 chunks); with a share's hashed chunks it stays under
	// maxShareChunks.
	maxAppendedChunks = 40
)

// Append adds placed (queue → member; queues not in the current
// assignment) to the assignment as a new generation and returns it:
// Update without removals.
func (w *AssignmentWriter) Append(ctx context.Context, placed map[string]string) (drover.Assignment, error) {
	return w.Update(ctx, placed, nil)
}

// Remove takes queues out of their owners' shares as a new generation and
// returns it: Update without placements.
func (w *AssignmentWriter) Remove(ctx context.Context, queues []string) (drover.Assignment, error) {
	return w.Update(ctx, nil, queues)
}

// Update changes the assignment without computing or rewriting it
// (docs/decisions.md, "Issue 40: removals are placement"): it adds placed
// (queue → member; queues not in the current assignment) and takes removed
// out of their owners' shares, as one new generation, and returns it.
// Removed queues the assignment does not hold are ignored; when nothing is
// left to change nothing is written. The writes grow with the queues
// changed: in each share that loses queues, the chunks that held them; in
// each share that gains queues, one appended chunk; the headers of those
// shares; then /assignment. Errors are those of Write. A queue placed that
// is assigned already, or placed and removed at once, fails with
// drover.ErrInvalidConfig before anything is sent.
//
// The assignment Current returns is updated in place.
func (w *AssignmentWriter) Update(ctx context.Context, placed map[string]string, removed []string) (drover.Assignment, error) {
	return w.change(ctx, placed, nil, removed)
}

// Move hands assigned queues to other members (queue → its new member)
// as one new generation, writing what those queues need: in each share
// that loses queues, the chunks that held them (a share left empty gets an
// empty header and loses its chunks, as in Write); in each share that
// gains queues, new chunks of them (not marked New: the queues were
// claimed before); the headers of those shares; then /assignment. A share
// that does not exist yet (a member that just joined) is created. It is
// how the leader writes a change of members without a whole computation
// (docs/decisions.md, "Issue 43: a join moves what it needs"); Write
// folds the chunks back. Queues moved to the member that holds them are
// ignored; a queue not assigned fails with drover.ErrInvalidConfig before
// anything is sent. Errors are those of Write.
func (w *AssignmentWriter) Move(ctx context.Context, moved map[string]string) (drover.Assignment, error) {
	return w.change(ctx, nil, moved, nil)
}

// maxShareChunks bounds a share's chunks: past it, Move rewrites the
// assignment with Write.
const maxShareChunks = 64

// change is Update and Move: placed queues go to appended chunks marked
// New, moved queues to new chunks of their new members, removed queues
// out of their owners' shares.
func (w *AssignmentWriter) change(ctx context.Context, placed, moved map[string]string, removed []string) (drover.Assignment, error) {
	if err := w.lead.Err(); err != nil {
		return drover.Assignment{}, fmt.Errorf("update assignment: %w", err)
	}
	if w.stale {
		if err := w.reload(ctx); err != nil {
			return drover.Assignment{}, fmt.Errorf("update assignment: re-read after a failed write: %w", err)
		}
	}
	byMember := map[string][]string{}
	for q, m := range placed {
		if _, ok := w.last.Queues[q]; ok {
			return drover.Assignment{}, fmt.Errorf("update assignment: %w: queue %q is assigned already", drover.ErrInvalidConfig, q)
		}
		byMember[m] = append(byMember[m], q)
	}
	dropBy := map[string][]string{}
	dropped := 0
	for _, q := range removed {
		if _, both := placed[q]; both {
			return drover.Assignment{}, fmt.Errorf("update assignment: %w: queue %q is placed and removed at once", drover.ErrInvalidConfig, q)
		}
		m, ok := w.last.Queues[q]
		if !ok {
			continue
		}
		dropBy[m] = append(dropBy[m], q)
		dropped++
	}
	movedIn := map[string][]string{}
	for q, to := range moved {
		from, ok := w.last.Queues[q]
		if !ok {
			return drover.Assignment{}, fmt.Errorf("move assignment: %w: queue %q is not assigned", drover.ErrInvalidConfig, q)
		}
		if from == to {
			continue
		}
		dropBy[from] = append(dropBy[from], q)
		movedIn[to] = append(movedIn[to], q)
	}
	if len(byMember) == 0 && len(dropBy) == 0 {
		return w.last, nil
	}
	changed := map[string]bool{}
	for _, by := range []map[string][]string{byMember, movedIn} {
		for m := range by {
			if err := validateNodeName(m); err != nil {
				return drover.Assignment{}, fmt.Errorf("update assignment: member %q: %w", m, err)
			}
			changed[m] = true
		}
	}
	for m := range dropBy {
		changed[m] = true
	}
	members := slices.Sorted(maps.Keys(changed))
	for _, m := range members {
		old := w.shares[m]
		exists := old != nil && old.exists
		// A share that does not exist is created only for queues moved
		// in (a member that just joined).
		whole := (exists && !old.complete) || (!exists && (len(byMember[m]) > 0 || len(dropBy[m]) > 0))
		if exists && len(byMember[m]) > 0 && appendTarget(old, chunkBytes(byMember[m])) == len(old.chunks) &&
			(countTrue(old.fresh) >= maxAppendedChunks || len(old.chunks) >= maxShareChunks) {
			whole = true // no appended chunk has room, and no new one may start
		}
		if exists && len(movedIn[m]) > 0 && len(old.chunks)+chunkBytes(movedIn[m])/shareChunkBytes+1 > maxShareChunks {
			whole = true
		}
		if whole {
			// No share to change in place, or too many chunks: a whole
			// write (which folds the appended and moved chunks).
			next := w.last
			// Sized for its queues, not cloned: a clone keeps the table
			// of the largest assignment it descends from, which after a
			// churn's retirements is most of the map (shrink.Map).
			next.Queues = make(map[string]string, len(w.last.Queues)+len(placed))
			maps.Copy(next.Queues, w.last.Queues)
			maps.Copy(next.Queues, placed)
			for _, qs := range dropBy {
				for _, q := range qs {
					delete(next.Queues, q)
				}
			}
			for q, to := range moved {
				next.Queues[q] = to
			}
			return w.Write(ctx, next)
		}
	}
	s := w.s
	gen := w.maxGen + 1
	var firstOps, chunkOps, headerOps, deleteOps []zkOp
	newShares := map[string]*writerShare{}
	for _, m := range members {
		old := w.shares[m]
		if old == nil || !old.exists {
			// A member's first share (Move to a member that just joined):
			// its header first, as an empty share of generation 0, as
			// Write creates one.
			old = &writerShare{nodes: map[int]bool{}, complete: true}
			p := s.sharePath(m)
			data := shareHeader{}.encode()
			firstOps = append(firstOps, zkOp{&zk.CreateRequest{Path: p, Data: data, Acl: s.acl, Flags: zk.FlagPersistent}, requestSize(p, data)})
		}
		ns := &writerShare{exists: true, chunks: slices.Clone(old.chunks), gens: slices.Clone(old.gens),
			nodes: maps.Clone(old.nodes), complete: true, fresh: slices.Clone(old.fresh), filling: old.filling}
		touched := map[int]bool{}
		// Removals: each queue out of the chunk that holds it (chunks
		// are sorted; a share has a few dozen at most).
		for _, q := range dropBy[m] {
			for i, c := range ns.chunks {
				k, ok := slices.BinarySearch(c, q)
				if !ok {
					continue
				}
				if !touched[i] {
					c = slices.Clone(c) // a delivered chunk is never modified
				}
				ns.chunks[i] = slices.Delete(c, k, k+1)
				touched[i] = true
				break
			}
		}
		// Placements: into the first appended chunk with room for them
		// (the one being filled, or one its queues' removals emptied),
		// else a new one.
		if qs := byMember[m]; len(qs) > 0 {
			i := appendTarget(ns, chunkBytes(qs))
			if i < len(ns.chunks) {
				qs = append(slices.Clone(ns.chunks[i]), qs...)
			} else {
				ns.chunks = append(ns.chunks, nil)
				ns.gens = append(ns.gens, 0)
				ns.fresh = append(ns.fresh, true)
			}
			sort.Strings(qs)
			ns.chunks[i] = qs
			ns.filling = i + 1
			touched[i] = true
		}
		// Queues moved in: new chunks of at most shareChunkBytes.
		if qs := movedIn[m]; len(qs) > 0 {
			sort.Strings(qs)
			for len(qs) > 0 {
				n, size := 0, 0
				for n < len(qs) && (n == 0 || size+len(qs[n])+3 <= shareChunkBytes) {
					size += len(qs[n]) + 3
					n++
				}
				touched[len(ns.chunks)] = true
				ns.chunks = append(ns.chunks, qs[:n:n])
				ns.gens = append(ns.gens, 0)
				ns.fresh = append(ns.fresh, false)
				qs = qs[n:]
			}
		}
		hp := s.sharePath(m)
		if ns.count() == 0 {
			// Emptied (its member left): an empty header, its chunks
			// gone, as Write leaves an emptied share.
			for i := range ns.nodes {
				cp := s.chunkPath(m, i)
				deleteOps = append(deleteOps, zkOp{&zk.DeleteRequest{Path: cp, Version: -1}, requestSize(cp, nil)})
			}
			hdata := shareHeader{Generation: gen, Chunks: []int64{}}.encode()
			headerOps = append(headerOps, zkOp{&zk.SetDataRequest{Path: hp, Data: hdata, Version: -1}, requestSize(hp, hdata)})
			newShares[m] = &writerShare{exists: true, nodes: map[int]bool{}, complete: true}
			continue
		}
		for _, i := range slices.Sorted(maps.Keys(touched)) {
			ns.gens[i] = gen
			p := s.chunkPath(m, i)
			data := ShareChunk{Generation: gen, Queues: nonNil(ns.chunks[i]), New: ns.fresh[i]}.encode()
			if ns.nodes[i] {
				chunkOps = append(chunkOps, zkOp{&zk.SetDataRequest{Path: p, Data: data, Version: -1}, requestSize(p, data)})
			} else {
				chunkOps = append(chunkOps, zkOp{&zk.CreateRequest{Path: p, Data: data, Acl: s.acl, Flags: zk.FlagPersistent}, requestSize(p, data)})
			}
			ns.nodes[i] = true
		}
		hdata := shareHeader{Generation: gen, Chunks: ns.gens, Queues: ns.count()}.encode()
		headerOps = append(headerOps, zkOp{&zk.SetDataRequest{Path: hp, Data: hdata, Version: -1}, requestSize(hp, hdata)})
		newShares[m] = ns
	}
	shares := 0
	for m, ws := range w.shares {
		if ns := newShares[m]; ns != nil {
			ws = ns
		}
		if ws.count() > 0 {
			shares++
		}
	}
	for m, ns := range newShares {
		if w.shares[m] == nil && ns.count() > 0 {
			shares++
		}
	}
	total := len(w.last.Queues) + len(placed) - dropped
	ap := s.path(assignmentNode)
	adata := mustJSON(assignmentHeader{Generation: gen, Strategy: w.last.Strategy, Leader: w.last.Leader, Members: shares, Queues: total})
	ops := slices.Concat(firstOps, chunkOps, headerOps, deleteOps, []zkOp{{&zk.SetDataRequest{Path: ap, Data: adata, Version: w.headerVersion}, requestSize(ap, adata)}})
	stats, err := w.send(ctx, gen, ops)
	if err != nil {
		return drover.Assignment{}, err
	}
	if w.shares == nil {
		w.shares = map[string]*writerShare{}
	}
	maps.Copy(w.shares, newShares)
	if w.last.Queues == nil {
		w.last.Queues = map[string]string{}
	}
	maps.Copy(w.last.Queues, placed)
	for _, qs := range dropBy {
		for _, q := range qs {
			delete(w.last.Queues, q)
		}
	}
	for q, to := range moved {
		w.last.Queues[q] = to
	}
	w.last.Queues = shrink.Map(w.last.Queues, &w.queuesPeak) // retirements: given back once most are gone
	w.last.Generation = gen
	w.maxGen = gen
	w.lastStats = stats
	return w.last, nil
}

// appendTarget returns the chunk of ws that placements of size bytes go
// into: the appended chunk being filled while they fit in it, else the
// first appended chunk that removals emptied, else len(ws.chunks) for a
// new one. Reusing emptied chunks keeps a churning share's chunks as few
// as its live queues need, so the whole write that folds them comes
// rarely; and as a family's keys retire in about the order they came, a
// removal step finds them in the few chunks they were appended to rather
// than spread over the hashed ones (docs/decisions.md, "Issue 40: where a
// new key's first start waits").
func appendTarget(ws *writerShare, bytes int) int {
	if i := ws.filling - 1; i >= 0 && i < len(ws.chunks) && ws.fresh[i] && chunkBytes(ws.chunks[i])+bytes <= appendChunkBytes {
		return i
	}
	for i, c := range ws.chunks {
		if ws.fresh[i] && len(c) == 0 {
			return i
		}
	}
	return len(ws.chunks)
}

// countTrue counts the true values of bs.
func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// count returns the queues of the share.
func (ws *writerShare) count() int {
	n := 0
	for _, c := range ws.chunks {
		n += len(c)
	}
	return n
}

// chunkBytes estimates the JSON of a chunk's queue names.
func chunkBytes(qs []string) int {
	n := 0
	for _, q := range qs {
		n += len(q) + 3
	}
	return n
}
