package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// The assignment is stored per member (DESIGN.md §10, after Kafka's KIP-848,
// which sends each member its own target), so that a member reads only its
// own share and a rebalance writes only what changed:
//
//	/assignment                 header: {generation, strategy, leader, members, queues}
//	/assignment/<member>        share header: {generation, chunks: [g0, g1, …], queues}
//	/assignment/<member>/<i>    chunk i of the share: {generation, queues: [sorted names]}
//
// A queue lives in chunk fnv32a(queue) mod len(chunks); a share has as many
// chunks (a power of two) as keep each under shareChunkBytes. The share
// header names the generation every chunk was written at. The leader writes
// a new generation in multis of at most maxRequestBytes, each starting with
// check(/coord/epoch): chunks first, then the share headers naming them,
// then deletions, then the header /assignment (with its version). A member
// watches only its share header; when a chunk it reads carries another
// generation than the share header names, the share is being written (or a
// write was cut short by a lost leadership): the member waits for the share
// header to change and never acts on a half-written share.

// shareChunkBytes is the size a share chunk is kept under (its queue names,
// JSON-encoded): a chunk changes when a queue in it moves, so smaller chunks
// mean less to write per move, more reads per share.
const shareChunkBytes = 128 << 10

// assignmentHeader is the data of /assignment.
type assignmentHeader struct {
	Generation int64  `json:"generation"`
	Strategy   string `json:"strategy"`
	Leader     string `json:"leader"`
	Members    int    `json:"members"` // shares with at least one queue
	Queues     int    `json:"queues"`
}

// shareHeader is the data of /assignment/<member>.
type shareHeader struct {
	Generation int64   `json:"generation"` // when this share last changed
	Chunks     []int64 `json:"chunks"`     // the generation chunk i was written at
	Queues     int     `json:"queues"`
}

// shareChunk is the data of /assignment/<member>/<i>.
type shareChunk struct {
	Generation int64    `json:"generation"`
	Queues     []string `json:"queues"`
}

// errShareIncomplete: a member's share is being written (a chunk carries
// another generation than the share header names). Wait for the header.
var errShareIncomplete = errors.New("coordinator: share is being written")

// AssignmentNode is an assignment as read: the whole one (Assignment,
// WatchAssignment) or one member's share (WatchShare), where Queues holds
// only that member's queues.
type AssignmentNode struct {
	Assignment drover.Assignment
	Version    int32 // znode version of /assignment (of the share header for WatchShare)
	Err        error // set when the data could not be decoded
}

// chunkCount returns how many chunks a share of these queues needs: the
// smallest power of two that keeps every chunk under shareChunkBytes.
func chunkCount(queues []string) int {
	size := 0
	for _, q := range queues {
		size += len(q) + 3
	}
	n := 1
	for size/n > shareChunkBytes {
		n *= 2
	}
	return n
}

// chunkOf returns the chunk of queue in a share of n chunks.
func chunkOf(queue string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(queue))
	return int(h.Sum32() % uint32(n))
}

// partition splits sorted queues into n chunks (each sorted).
func partition(queues []string, n int) [][]string {
	parts := make([][]string, n)
	for _, q := range queues {
		i := chunkOf(q, n)
		parts[i] = append(parts[i], q)
	}
	return parts
}

func (s *Session) sharePath(member string) string { return s.path(assignmentNode, member) }

func (s *Session) chunkPath(member string, i int) string {
	return s.path(assignmentNode, member, strconv.Itoa(i))
}

// storedShare is one member's share as found in ZooKeeper.
type storedShare struct {
	exists   bool // the share header node exists
	header   shareHeader
	chunks   map[int]shareChunk // every chunk node found, by index
	complete bool               // every chunk the header names exists at the generation it names
	err      error              // the header or a chunk could not be decoded
}

// queues returns the share's queues: those of the chunks the header names
// when complete, else of every chunk found (the latest intent of a write
// that was cut short).
func (st *storedShare) queues() []string {
	var out []string
	for i, c := range st.chunks {
		if st.complete && i >= len(st.header.Chunks) {
			continue
		}
		out = append(out, c.Queues...)
	}
	sort.Strings(out)
	return out
}

// storedAssignment is the whole assignment as found in ZooKeeper.
type storedAssignment struct {
	header  assignmentHeader
	version int32 // of /assignment; -1 when missing
	err     error // the header could not be decoded
	shares  map[string]*storedShare
}

// maxGeneration is the highest generation found anywhere in the tree.
func (sa *storedAssignment) maxGeneration() int64 {
	g := sa.header.Generation
	for _, st := range sa.shares {
		g = max(g, st.header.Generation)
		for _, c := range st.chunks {
			g = max(g, c.Generation)
		}
	}
	return g
}

// assignment assembles the whole assignment.
func (sa *storedAssignment) assignment() drover.Assignment {
	a := drover.Assignment{Generation: sa.header.Generation, Strategy: sa.header.Strategy, Leader: sa.header.Leader, Queues: map[string]string{}}
	for m, st := range sa.shares {
		for _, q := range st.queues() {
			a.Queues[q] = m
		}
	}
	return a
}

// readAssignmentTree reads the header, every share header and every chunk,
// members in parallel. It costs a read per member and per chunk: for the
// leader taking over, operators and observers — never for a member.
func (s *Session) readAssignmentTree(ctx context.Context) (*storedAssignment, error) {
	root := s.path(assignmentNode)
	nd, err := getNode(ctx, s, root)
	sa := &storedAssignment{version: -1, shares: map[string]*storedShare{}}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return sa, nil
	case err != nil:
		return nil, fmt.Errorf("read assignment: %w", err)
	}
	sa.version = nd.stat.Version
	if len(bytes.TrimSpace(nd.data)) > 0 {
		if err := json.Unmarshal(nd.data, &sa.header); err != nil {
			sa.header = assignmentHeader{}
			sa.err = fmt.Errorf("decode assignment %s: %w", root, err)
		}
	}
	members, err := bounded(ctx, s, func(c zkConn) ([]string, error) {
		names, _, err := c.Children(root)
		return names, err
	})
	if err != nil {
		return nil, fmt.Errorf("read assignment: list shares: %w", err)
	}
	type read struct {
		st  *storedShare
		err error
	}
	reads := parallelMap(ctx, members, func(m string) read {
		st, err := s.readShareTree(ctx, m)
		return read{st, err}
	})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read assignment: %w", err)
	}
	for i, r := range reads {
		if r.err != nil {
			return nil, fmt.Errorf("read assignment: share of %s: %w", members[i], r.err)
		}
		if r.st.exists {
			sa.shares[members[i]] = r.st
		}
	}
	return sa, nil
}

// readShareTree reads one share header, lists its chunk nodes and reads
// them.
func (s *Session) readShareTree(ctx context.Context, member string) (*storedShare, error) {
	st := &storedShare{chunks: map[int]shareChunk{}}
	p := s.sharePath(member)
	nd, err := getNode(ctx, s, p)
	if errors.Is(err, zk.ErrNoNode) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	st.exists = true
	if err := json.Unmarshal(nd.data, &st.header); err != nil && len(bytes.TrimSpace(nd.data)) > 0 {
		st.err = fmt.Errorf("decode share %s: %w", p, err)
	}
	names, err := bounded(ctx, s, func(c zkConn) ([]string, error) {
		names, _, err := c.Children(p)
		return names, err
	})
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		i, err := strconv.Atoi(n)
		if err != nil || i < 0 {
			continue
		}
		cnd, err := getNode(ctx, s, p+"/"+n)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var c shareChunk
		if err := json.Unmarshal(cnd.data, &c); err != nil {
			st.err = fmt.Errorf("decode share chunk %s/%s: %w", p, n, err)
			c = shareChunk{Generation: -1}
		}
		st.chunks[i] = c
	}
	st.complete = st.err == nil
	for i, g := range st.header.Chunks {
		if c, ok := st.chunks[i]; !ok || c.Generation != g {
			st.complete = false
		}
	}
	return st, nil
}

// Read reads the whole assignment: the header and every share. An
// empty /assignment (nothing written yet) reads as generation 0 with no
// queues. Its cost grows with the members and chunks: a member reads its own
// share with WatchShare instead.
func (a Assignments) Read(ctx context.Context) (AssignmentNode, error) {
	s := a.s
	sa, err := s.readAssignmentTree(ctx)
	if err != nil {
		return AssignmentNode{}, err
	}
	an := AssignmentNode{Assignment: sa.assignment(), Version: sa.version, Err: sa.err}
	return an, an.Err
}

// Watch delivers the whole assignment now and after every new
// generation until ctx ends or the session is lost, then closes the channel.
// Only the latest value is kept for a slow reader. A corrupt header is
// delivered with Err set. It watches /assignment only and reads every share
// on each change: for observers (tests, benchmarks); members use WatchShare.
func (a Assignments) Watch(ctx context.Context) <-chan AssignmentNode {
	s := a.s
	p := s.path(assignmentNode)
	return watchLoop(ctx, s, "assignment", func(ctx context.Context, ws *watchSet) (AssignmentNode, error) {
		if _, err := readNode(ctx, s, ws, p); err != nil {
			return AssignmentNode{}, fmt.Errorf("read assignment: %w", err)
		}
		sa, err := s.readAssignmentTree(ctx)
		if err != nil {
			return AssignmentNode{}, err
		}
		return AssignmentNode{Assignment: sa.assignment(), Version: sa.version, Err: sa.err}, nil
	})
}

// WatchShare delivers member's share of the assignment now and after every
// change of it until ctx ends or the session is lost, then closes the
// channel; Assignment.Queues holds only the member's queues, Generation the
// generation the share was last written at. It watches the member's share
// header only and reads just the chunks whose generation changed, so a
// rebalance that does not touch this member costs it nothing. A share being
// written is not delivered until its header names complete chunks. A missing
// share (none written yet, or removed) is an empty share at the generation of
// /assignment. A corrupt share is delivered with Err set.
func (a Assignments) WatchShare(ctx context.Context, member string) <-chan AssignmentNode {
	s := a.s
	r := &shareReader{s: s, member: member, chunks: map[int]shareChunk{}}
	return watchLoop(ctx, s, "share", r.refresh)
}

// shareReader reads one member's share, keeping the chunks it has read.
type shareReader struct {
	s      *Session
	member string
	chunks map[int]shareChunk // by index, as last read
}

// refresh reads the share header (arming its watch) and the chunks that
// changed. It fails with errShareIncomplete when the share is being written.
func (r *shareReader) refresh(ctx context.Context, ws *watchSet) (AssignmentNode, error) {
	s := r.s
	if err := validateNodeName(r.member); err != nil {
		return AssignmentNode{Err: fmt.Errorf("share of %q: %w", r.member, err)}, nil
	}
	p := s.sharePath(r.member)
	nd, err := readNode(ctx, s, ws, p)
	if err != nil {
		return AssignmentNode{}, fmt.Errorf("read share of %s: %w", r.member, err)
	}
	a := drover.Assignment{Queues: map[string]string{}}
	if nd == nil {
		clear(r.chunks)
		hd, err := getNode(ctx, s, s.path(assignmentNode))
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return AssignmentNode{}, fmt.Errorf("read share of %s: generation: %w", r.member, err)
		}
		var h assignmentHeader
		json.Unmarshal(hd.data, &h) // a corrupt header: generation 0
		a.Generation = h.Generation
		return AssignmentNode{Assignment: a, Version: -1}, nil
	}
	var h shareHeader
	if len(bytes.TrimSpace(nd.data)) > 0 {
		if err := json.Unmarshal(nd.data, &h); err != nil {
			return AssignmentNode{Version: nd.stat.Version, Err: fmt.Errorf("decode share %s: %w", p, err)}, nil
		}
	}
	var stale []int
	for i, g := range h.Chunks {
		if c, ok := r.chunks[i]; !ok || c.Generation != g {
			stale = append(stale, i)
		}
	}
	for i := range r.chunks {
		if i >= len(h.Chunks) {
			delete(r.chunks, i)
		}
	}
	type read struct {
		c   shareChunk
		err error
	}
	reads := parallelMap(ctx, stale, func(i int) read {
		cnd, err := getNode(ctx, s, s.chunkPath(r.member, i))
		if err != nil {
			return read{err: err}
		}
		var c shareChunk
		if err := json.Unmarshal(cnd.data, &c); err != nil {
			return read{err: fmt.Errorf("decode share chunk %s/%d: %w", p, i, err)}
		}
		return read{c: c}
	})
	if err := ctx.Err(); err != nil {
		return AssignmentNode{}, err
	}
	for k, rd := range reads {
		i := stale[k]
		switch {
		case errors.Is(rd.err, zk.ErrNoNode):
			return AssignmentNode{}, errShareIncomplete
		case rd.err != nil:
			return AssignmentNode{}, fmt.Errorf("read share of %s: %w", r.member, rd.err)
		case rd.c.Generation != h.Chunks[i]:
			return AssignmentNode{}, errShareIncomplete
		}
		r.chunks[i] = rd.c
	}
	a.Generation = h.Generation
	for _, c := range r.chunks {
		for _, q := range c.Queues {
			a.Queues[q] = r.member
		}
	}
	return AssignmentNode{Assignment: a, Version: nd.stat.Version}, nil
}

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
		ns := &writerShare{exists: true, chunks: parts, gens: make([]int64, n), nodes: map[int]bool{}, complete: true}
		changed := old == nil || !old.exists || !old.complete || len(old.chunks) != n
		if old == nil || !old.exists {
			// Chunks are children of the share header: create it first,
			// as an empty share of generation 0 (nothing yet).
			p := s.sharePath(m)
			data := mustJSON(shareHeader{})
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
			data := mustJSON(shareChunk{Generation: gen, Queues: nonNil(part)})
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
			data := mustJSON(shareHeader{Generation: gen, Chunks: ns.gens, Queues: len(qs)})
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
		data := mustJSON(shareHeader{Generation: gen, Chunks: []int64{}})
		add(&headerOps, &zk.SetDataRequest{Path: p, Data: data, Version: -1}, p, data)
		newShares[m] = &writerShare{exists: true, nodes: map[int]bool{}, complete: true}
	}
	hp := s.path(assignmentNode)
	hdata := mustJSON(assignmentHeader{Generation: gen, Strategy: next.Strategy, Leader: next.Leader, Members: len(members), Queues: len(next.Queues)})
	headerOp := zkOp{&zk.SetDataRequest{Path: hp, Data: hdata, Version: w.headerVersion}, requestSize(hp, hdata)}

	ops := slices.Concat(first, chunkOps, headerOps, deleteOps, []zkOp{headerOp})
	multis, err := w.pack(ops)
	if err != nil {
		return drover.Assignment{}, fmt.Errorf("write assignment generation %d: %w", gen, err)
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
				return drover.Assignment{}, fmt.Errorf("write assignment generation %d: cut after multi %d of %d: %w", gen, i+1, len(multis), err)
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
			return drover.Assignment{}, fmt.Errorf("write assignment generation %d: %w: %w (epoch %d is no longer current, or the assignment changed behind this writer)",
				gen, drover.ErrFenced, drover.ErrNotLeader, w.epochVersion)
		case isUnknownOutcome(err):
			return drover.Assignment{}, fmt.Errorf("write assignment generation %d: multi %d of %d: %w: %w", gen, i+1, len(multis), ErrOutcomeUnknown, err)
		default:
			return drover.Assignment{}, fmt.Errorf("write assignment generation %d: multi %d of %d: %w", gen, i+1, len(multis), err)
		}
	}
	w.shares = newShares
	w.maxGen = gen
	w.last = next
	w.lastStats = stats
	return next, nil
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
