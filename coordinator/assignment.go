package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/namehash"
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
//
// This file holds the layout and the reads (Assignments); the leader's
// writes are in assignment_writer.go (AssignmentWriter).

// shareChunkBytes is the size a share chunk is kept under (its queue names,
// JSON-encoded): a chunk changes when a queue in it moves, so smaller chunks
// mean less to write per move, more reads per share. A member gives up the
// queues of one chunk first (rebalance's move rank), so a join that takes
// a hundred queues off each of 99 members of 10,000 rewrites one chunk of
// each: at 128 KB every such share was one chunk, and a join at 100 ×
// 1,000,000 wrote and read its whole 10 MB (docs/decisions.md, "Issue 43:
// a member gives up the queues of one chunk").
const shareChunkBytes = 32 << 10

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

// ShareChunk is the data of /assignment/<member>/<i>.
// ShareChunk is one chunk of a member's share: the queues it lists, sorted,
// and the generation it was written at. WatchShare delivers a share as its
// chunks; a delivered chunk is never modified, so a reader may keep it and
// skip the chunks of the next share whose generation did not move.
type ShareChunk struct {
	Generation int64    `json:"generation"`
	Queues     []string `json:"queues"`
	// New marks a chunk of queues placed as new to the fleet: one Append
	// wrote, or one Write wrote with none of its queues in the assignment
	// before (a fleet's first).
	New bool `json:"new,omitempty"`
}

// errShareIncomplete: a member's share is being written (a chunk carries
// another generation than the share header names). Wait for the header.
var errShareIncomplete = errors.New("coordinator: share is being written")

// AssignmentNode is an assignment as read: the whole one (Assignment,
// Watch) or one member's share (WatchShare), where Queues holds
// only that member's queues.
type AssignmentNode struct {
	// Assignment is the assignment; for WatchShare its Generation only
	// (Queues is nil: see Share).
	Assignment drover.Assignment
	Version    int32 // znode version of /assignment (of the share header for WatchShare)
	Err        error // set when the data could not be decoded
	// Share (WatchShare only; never nil there) is the member's share as
	// the chunks it is written in, by index. Chunks that say New hold
	// queues the leader placed as new to the fleet (AssignmentWriter.Append,
	// or a Write of queues no earlier assignment held) and no whole write
	// has rewritten since: most were never claimed
	// (Owner.New). A member with 25,000 queues gains a chunk's worth a
	// generation while a family's queues appear, dozens of generations a
	// second: building a map of its whole share each time took a sixth of
	// its CPU, and its reconciler another quarter (docs/decisions.md,
	// "A member applies what changed in its share").
	Share []ShareChunk
}

// ShareQueues returns the queues of a share WatchShare delivered, each
// mapped to member (Assignment.Queues's form).
func (n AssignmentNode) ShareQueues(member string) map[string]string {
	out := map[string]string{}
	for _, c := range n.Share {
		for _, q := range c.Queues {
			out[q] = member
		}
	}
	return out
}

// chunkCount returns how many chunks a share of these queues needs: the
// smallest power of two that keeps every chunk under shareChunkBytes.
func chunkCount(queues []string) int {
	size := chunkBytes(queues)
	n := 1
	for size/n > shareChunkBytes {
		n *= 2
	}
	return n
}

// chunkOf returns the chunk of queue in a share of n chunks.
func chunkOf(queue string, n int) int {
	return int(namehash.FNV32a(queue) % uint32(n))
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
	chunks   map[int]ShareChunk // every chunk node found, by index
	complete bool               // every chunk the header names exists at the generation it names
	err      error              // the header or a chunk could not be decoded
}

// queues returns the share's queues: those of the chunks the header names
// when complete, else of every chunk found (the latest intent of a write
// that was cut short).
func (st *storedShare) queues() []string {
	var out []string
	for _, c := range st.listed() {
		out = append(out, c.Queues...)
	}
	sort.Strings(out)
	return out
}

// listedByIndex returns the chunks queues lists, by index.
func (st *storedShare) listedByIndex() map[int]ShareChunk {
	out := make(map[int]ShareChunk, len(st.chunks))
	for i, c := range st.chunks {
		if st.complete && i >= len(st.header.Chunks) {
			continue
		}
		out[i] = c
	}
	return out
}

// listed returns the chunks queues lists, in no order.
func (st *storedShare) listed() []ShareChunk {
	out := make([]ShareChunk, 0, len(st.chunks))
	for i, c := range st.chunks {
		if st.complete && i >= len(st.header.Chunks) {
			continue
		}
		out = append(out, c)
	}
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
	// Sized once and filled chunk by chunk, unsorted: an observer of a
	// million queues rebuilt the map growing it and sorted every share
	// first, 0.2-0.36 s of CPU per generation on the machine it measured
	// (docs/decisions.md, "Issue 43: the bench's observer at a million").
	shares := make(map[string][]ShareChunk, len(sa.shares))
	n := 0
	for m, st := range sa.shares {
		cs := st.listed()
		for _, c := range cs {
			n += len(c.Queues)
		}
		shares[m] = cs
	}
	a := drover.Assignment{Generation: sa.header.Generation, Strategy: sa.header.Strategy, Leader: sa.header.Leader, Queues: make(map[string]string, n)}
	for m, cs := range shares {
		for _, c := range cs {
			for _, q := range c.Queues {
				a.Queues[q] = m
			}
		}
	}
	return a
}

// readAssignmentTree reads the header, every share header and every chunk,
// members in parallel. It costs a read per member and per chunk: for the
// leader taking over, operators and observers — never for a member.
func (s *Session) readAssignmentTree(ctx context.Context) (*storedAssignment, error) {
	return s.readAssignmentTreeAfter(ctx, nil)
}

// readShareTree reads one share header, lists its chunk nodes and reads
// them.
func (s *Session) readShareTree(ctx context.Context, member string) (*storedShare, error) {
	st := &storedShare{chunks: map[int]ShareChunk{}}
	p := s.sharePath(member)
	nd, err := getNode(ctx, s, p)
	if errors.Is(err, zk.ErrNoNode) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	st.exists = true
	var herr error
	if st.header, herr = decodeShareHeader(nd.data); herr != nil && len(bytes.TrimSpace(nd.data)) > 0 {
		st.err = fmt.Errorf("decode share %s: %w", p, herr)
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
		c, err := decodeShareChunk(cnd.data)
		if err != nil {
			st.err = fmt.Errorf("decode share chunk %s/%s: %w", p, n, err)
			c = ShareChunk{Generation: -1}
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
// header on each change, but only the chunks whose generation changed (as
// WatchShare does for one share), and builds each map from the one it
// delivered before: for observers (tests, benchmarks); members use
// WatchShare. Reading every chunk and building the whole map again made
// the bench's observer of a million queues the last to know of a leave
// (docs/decisions.md, "Issue 43: the bench's observer at a million").
func (a Assignments) Watch(ctx context.Context) <-chan AssignmentNode {
	s := a.s
	p := s.path(assignmentNode)
	var (
		prev       *storedAssignment
		prevQueues map[string]string // delivered: never modified
	)
	return watchLoop(ctx, s, "assignment", func(ctx context.Context, ws *watchSet) (AssignmentNode, error) {
		if _, err := readNode(ctx, s, ws, p); err != nil {
			return AssignmentNode{}, fmt.Errorf("read assignment: %w", err)
		}
		sa, err := s.readAssignmentTreeAfter(ctx, prev)
		if err != nil {
			return AssignmentNode{}, err
		}
		var as drover.Assignment
		if prev == nil {
			as = sa.assignment()
		} else {
			as = sa.assignmentAfter(prev, prevQueues)
		}
		prev, prevQueues = sa, as.Queues
		return AssignmentNode{Assignment: as, Version: sa.version, Err: sa.err}, nil
	})
}

// readAssignmentTreeAfter is readAssignmentTree reusing the chunks of prev
// (nil: none, every chunk is read) that a share's header still names at
// the same generation.
func (s *Session) readAssignmentTreeAfter(ctx context.Context, prev *storedAssignment) (*storedAssignment, error) {
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
		var old *storedShare // nil: read whole
		if prev != nil {
			old = prev.shares[m]
		}
		st, err := s.readShareTreeAfter(ctx, m, old)
		return read{st, err}
	})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read assignment: %w", err)
	}
	// A member keeps the name string of the read before: every queue's
	// value in the assembled map is then the string the last map held, so
	// an observer diffing a million queues compares pointers, not bytes
	// (the bench's observer at a join: docs/decisions.md, "Issue 43: a
	// config decoded once a shape; the observer's diff by pointer").
	var known map[string]string
	if prev != nil {
		known = make(map[string]string, len(prev.shares))
		for m := range prev.shares {
			known[m] = m
		}
	}
	for i, r := range reads {
		if r.err != nil {
			return nil, fmt.Errorf("read assignment: share of %s: %w", members[i], r.err)
		}
		if r.st.exists {
			m := members[i]
			if k, ok := known[m]; ok {
				m = k
			}
			sa.shares[m] = r.st
		}
	}
	return sa, nil
}

// readShareTreeAfter is readShareTree reusing old's chunks (old complete)
// that the header names at the generation old read them at. A share whose
// header or a chunk read does not make it complete is read whole, as
// readShareTree reads it.
func (s *Session) readShareTreeAfter(ctx context.Context, member string, old *storedShare) (*storedShare, error) {
	if old == nil || !old.complete {
		return s.readShareTree(ctx, member)
	}
	p := s.sharePath(member)
	nd, err := getNode(ctx, s, p)
	if errors.Is(err, zk.ErrNoNode) {
		return &storedShare{chunks: map[int]ShareChunk{}}, nil
	}
	if err != nil {
		return nil, err
	}
	h, herr := decodeShareHeader(nd.data)
	if herr != nil {
		return s.readShareTree(ctx, member)
	}
	st := &storedShare{exists: true, header: h, chunks: make(map[int]ShareChunk, len(h.Chunks)), complete: true}
	for i, g := range h.Chunks {
		if c, ok := old.chunks[i]; ok && i < len(old.header.Chunks) && c.Generation == g {
			st.chunks[i] = c
			continue
		}
		cnd, err := getNode(ctx, s, s.chunkPath(member, i))
		if errors.Is(err, zk.ErrNoNode) {
			return s.readShareTree(ctx, member)
		}
		if err != nil {
			return nil, err
		}
		c, err := decodeShareChunk(cnd.data)
		if err != nil || c.Generation != g {
			return s.readShareTree(ctx, member)
		}
		st.chunks[i] = c
	}
	return st, nil
}

// assignmentAfter assembles the whole assignment from prevQueues, the map
// assembled from prev: a copy of it without the queues of the chunks that
// changed, then with those of their new versions. A chunk of a complete
// share that both name at the same index and generation is the same
// chunk.
//
// When the changed chunks hold more than half the queues (a join's write
// rewrites every donor's chunk) the map is assembled afresh instead: a
// copy, a delete and an insert per queue cost more than the insert.
func (sa *storedAssignment) assignmentAfter(prev *storedAssignment, prevQueues map[string]string) drover.Assignment {
	same := func(x, y *storedShare, i int, c ShareChunk) bool {
		if x == nil || y == nil || !x.complete || !y.complete || i >= len(y.header.Chunks) {
			return false
		}
		o, ok := y.chunks[i]
		return ok && o.Generation == c.Generation
	}
	type changed struct {
		member string
		c      ShareChunk
	}
	n := 0
	// notIn lists the chunks of from that to does not hold the same.
	notIn := func(from, to map[string]*storedShare) []changed {
		var out []changed
		for m, x := range from {
			for i, c := range x.listedByIndex() {
				if !same(x, to[m], i, c) {
					out = append(out, changed{m, c})
					n += len(c.Queues)
				}
			}
		}
		return out
	}
	gone, added := notIn(prev.shares, sa.shares), notIn(sa.shares, prev.shares)
	if n > len(prevQueues) {
		return sa.assignment()
	}
	a := drover.Assignment{Generation: sa.header.Generation, Strategy: sa.header.Strategy, Leader: sa.header.Leader, Queues: maps.Clone(prevQueues)}
	if a.Queues == nil {
		a.Queues = map[string]string{}
	}
	for _, g := range gone {
		for _, q := range g.c.Queues {
			if a.Queues[q] == g.member {
				delete(a.Queues, q)
			}
		}
	}
	for _, ad := range added {
		for _, q := range ad.c.Queues {
			a.Queues[q] = ad.member
		}
	}
	return a
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
	r := &shareReader{s: s, member: member, chunks: map[int]ShareChunk{}}
	return watchLoop(ctx, s, "share", r.refresh)
}

// shareReader reads one member's share, keeping the chunks it has read.
type shareReader struct {
	s      *Session
	member string
	chunks map[int]ShareChunk // by index, as last read
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
	a := drover.Assignment{}
	if nd == nil {
		clear(r.chunks)
		hd, err := getNode(ctx, s, s.path(assignmentNode))
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return AssignmentNode{}, fmt.Errorf("read share of %s: generation: %w", r.member, err)
		}
		var h assignmentHeader
		json.Unmarshal(hd.data, &h) // a corrupt header: generation 0
		a.Generation = h.Generation
		return AssignmentNode{Assignment: a, Version: -1, Share: []ShareChunk{}}, nil
	}
	var h shareHeader
	if len(bytes.TrimSpace(nd.data)) > 0 {
		if h, err = decodeShareHeader(nd.data); err != nil {
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
		c   ShareChunk
		err error
	}
	reads := parallelMap(ctx, stale, func(i int) read {
		cnd, err := getNode(ctx, s, s.chunkPath(r.member, i))
		if err != nil {
			return read{err: err}
		}
		c, err := decodeShareChunk(cnd.data)
		if err != nil {
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
	share := make([]ShareChunk, len(h.Chunks))
	for i := range share {
		share[i] = r.chunks[i]
	}
	return AssignmentNode{Assignment: a, Version: nd.stat.Version, Share: share}, nil
}
