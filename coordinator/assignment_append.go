package coordinator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
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
	// Append rewrites the assignment with Write (a member that starts
	// reads every chunk of its share).
	maxAppendedChunks = 16
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
	if len(byMember) == 0 && len(dropBy) == 0 {
		return w.last, nil
	}
	changed := map[string]bool{}
	for m := range byMember {
		if err := validateNodeName(m); err != nil {
			return drover.Assignment{}, fmt.Errorf("update assignment: member %q: %w", m, err)
		}
		changed[m] = true
	}
	for m := range dropBy {
		changed[m] = true
	}
	members := slices.Sorted(maps.Keys(changed))
	for _, m := range members {
		old := w.shares[m]
		whole := old == nil || !old.exists || !old.complete
		if len(byMember[m]) > 0 && !whole && len(old.chunks)-old.hashed >= maxAppendedChunks {
			whole = true
		}
		if whole {
			// No share to change in place, or too many appended chunks: a
			// whole write (which folds the appended chunks).
			next := w.last
			next.Queues = maps.Clone(w.last.Queues)
			maps.Copy(next.Queues, placed)
			for _, qs := range dropBy {
				for _, q := range qs {
					delete(next.Queues, q)
				}
			}
			return w.Write(ctx, next)
		}
	}
	s := w.s
	gen := w.maxGen + 1
	var chunkOps, headerOps []zkOp
	newShares := map[string]*writerShare{}
	for _, m := range members {
		old := w.shares[m]
		ns := &writerShare{exists: true, chunks: slices.Clone(old.chunks), gens: slices.Clone(old.gens),
			nodes: maps.Clone(old.nodes), complete: true, hashed: old.hashed}
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
		// Placements: into the last appended chunk while it stays small,
		// else a new one.
		if qs := byMember[m]; len(qs) > 0 {
			i := len(ns.chunks)
			if last := i - 1; last >= ns.hashed && chunkBytes(ns.chunks[last])+chunkBytes(qs) <= appendChunkBytes {
				i = last
				qs = append(slices.Clone(ns.chunks[last]), qs...)
			} else {
				ns.chunks = append(ns.chunks, nil)
				ns.gens = append(ns.gens, 0)
			}
			sort.Strings(qs)
			ns.chunks[i] = qs
			touched[i] = true
		}
		for _, i := range slices.Sorted(maps.Keys(touched)) {
			ns.gens[i] = gen
			p := s.chunkPath(m, i)
			data := mustJSON(ShareChunk{Generation: gen, Queues: nonNil(ns.chunks[i]), New: i >= ns.hashed})
			if ns.nodes[i] {
				chunkOps = append(chunkOps, zkOp{&zk.SetDataRequest{Path: p, Data: data, Version: -1}, requestSize(p, data)})
			} else {
				chunkOps = append(chunkOps, zkOp{&zk.CreateRequest{Path: p, Data: data, Acl: s.acl, Flags: zk.FlagPersistent}, requestSize(p, data)})
			}
			ns.nodes[i] = true
		}
		hp := s.sharePath(m)
		hdata := mustJSON(shareHeader{Generation: gen, Chunks: ns.gens, Queues: ns.count()})
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
	total := len(w.last.Queues) + len(placed) - dropped
	ap := s.path(assignmentNode)
	adata := mustJSON(assignmentHeader{Generation: gen, Strategy: w.last.Strategy, Leader: w.last.Leader, Members: shares, Queues: total})
	ops := slices.Concat(chunkOps, headerOps, []zkOp{{&zk.SetDataRequest{Path: ap, Data: adata, Version: w.headerVersion}, requestSize(ap, adata)}})
	stats, err := w.send(ctx, gen, ops)
	if err != nil {
		return drover.Assignment{}, err
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
	w.last.Generation = gen
	w.maxGen = gen
	w.lastStats = stats
	return w.last, nil
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
