package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// The per-queue reads of claims (a claim's offset and owner nodes, the
// queue's config read beside it) are coalesced per session into multiRead
// requests (ZooKeeper 3.6 and later: many getData in one request, each
// answered on its own), as multi_batch.go coalesces the claims' writes: the
// first reader to arrive while nothing is in flight sends at once (a lone
// read pays no extra latency), readers arriving meanwhile queue up and the
// next leader sends them all in one request (its request and estimated
// reply cut under batchBytes, at most maxReadsPerRequest reads). A member claiming 10,000 queues read them with a
// request each: most of ZooKeeper's work at a fleet's start and a join
// (docs/decisions.md, "Issue 43: reads in one request").
//
// Coalescing only delays a read, never sends it before a request sent
// earlier: a read issued after a write's reply still reaches the session
// after the write. A server that refuses the opcode (older than 3.6: it
// answers ErrUnimplemented and closes the connection) is asked with single
// reads for the rest of the session.

// maxReadsPerRequest bounds the reads of one multiRead: what the same
// reads sent one by one held when 64 claims a session were in flight (two
// reads each, and their config reads). With 256 claims in flight their
// reads go in two requests or more, one after another.
const maxReadsPerRequest = 256

// A multiRead's reply is kept under batchBytes (DESIGN.md §10: no request
// or response past maxRequestBytes) by its estimate: every read counted as
// the largest node the session's multiReads have read so far (at least
// minReadEstimate) plus readReplyOverhead (stat, header, length). Offsets,
// owner nodes and configs are a few hundred bytes, so batches are cut by
// maxReadsPerRequest; a session reading large configs sends fewer per
// request. A node larger than any read before can take one reply past the
// estimate, by at most its own size (a node is at most maxRequestBytes,
// under jute.maxbuffer; the client grows its buffer).
const (
	minReadEstimate   = 1 << 10
	readReplyOverhead = 128
)

// errMultiReadRefused is handed to the readers of a batch the server
// refused: each reads its nodes one by one.
var errMultiReadRefused = errors.New("multiRead refused by the server")

// readResult is one node as read: its data and stat, or the read's own
// error (zk.ErrNoNode when missing).
type readResult struct {
	nd  nodeData
	err error
}

// readReq is one reader's nodes in a batch.
type readReq struct {
	paths []string
	size  int

	res []readResult // one per path, when the request was answered
	err error        // the request's error: nothing was read

	ready chan struct{} // result ready, or leadership handed over
	lead  bool
}

// readBatcher coalesces the reads of one session.
type readBatcher struct {
	s *Session

	mu      sync.Mutex
	busy    bool
	pending []*readReq

	// requests counts the multiReads sent (tests and figures).
	requests atomic.Int64
	// single is set once the server refused multiRead: every read goes
	// alone from then on.
	single atomic.Bool
	// largest is the largest node a multiRead has read (bytes of data).
	largest atomic.Int64
}

// fits reports whether a multiRead of ops reads keeps its request and its
// reply under batchBytes, its request being size bytes.
func (b *readBatcher) fits(ops, size int) bool {
	per := max(int(b.largest.Load()), minReadEstimate) + readReplyOverhead
	return ops <= maxReadsPerRequest && size <= batchBytes && ops*per <= batchBytes
}

// get reads paths (in one request, with the other readers' paths of the
// session) and returns each one's data and stat or its own error
// (zk.ErrNoNode…), or the error of the whole request (then nothing was
// read). If ctx ends first it returns ctx.Err().
func (b *readBatcher) get(ctx context.Context, paths ...string) ([]readResult, error) {
	if b.single.Load() {
		return b.each(ctx, paths)
	}
	res, err := b.coalesced(ctx, paths)
	if errors.Is(err, errMultiReadRefused) {
		return b.each(ctx, paths)
	}
	return res, err
}

// getOne reads one node as getNode does (a missing node: zk.ErrNoNode),
// coalesced with the session's other reads.
func (b *readBatcher) getOne(ctx context.Context, p string) (nodeData, error) {
	res, err := b.get(ctx, p)
	if err != nil {
		return nodeData{}, err
	}
	return res[0].nd, res[0].err
}

// each reads paths one request each, all at once (the session pipelines
// them), as before multiRead.
func (b *readBatcher) each(ctx context.Context, paths []string) ([]readResult, error) {
	res := parallelMap(ctx, paths, func(p string) readResult {
		nd, err := getNode(ctx, b.s, p)
		return readResult{nd, err}
	})
	if err := ctx.Err(); err != nil {
		return nil, err // a read may not have run
	}
	return res, nil
}

// coalesced queues r's paths and waits for its batch's reply (sending the
// batch when r leads it).
func (b *readBatcher) coalesced(ctx context.Context, paths []string) ([]readResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &readReq{paths: paths, ready: make(chan struct{}, 1)}
	for _, p := range paths {
		r.size += requestSize(p, nil)
	}
	b.mu.Lock()
	b.pending = append(b.pending, r)
	if b.busy {
		b.mu.Unlock()
		select {
		case <-r.ready:
		case <-ctx.Done():
			b.mu.Lock()
			if r.lead {
				// Made leader (the token is in ready): send the batch.
				b.mu.Unlock()
				<-r.ready
				break
			}
			if i := slices.Index(b.pending, r); i >= 0 {
				b.pending = slices.Delete(b.pending, i, i+1)
			}
			// Not sent, or in flight: a read leaves nothing to settle.
			b.mu.Unlock()
			return nil, ctx.Err()
		}
		if !r.lead {
			return r.res, r.err
		}
		b.mu.Lock()
	} else {
		b.busy = true
	}
	// Leader: take what fits in one request (this one is first), send,
	// hand over.
	n, size, ops := 0, 0, 0
	for n < len(b.pending) && (n == 0 || b.fits(ops+len(b.pending[n].paths), size+b.pending[n].size)) {
		size += b.pending[n].size
		ops += len(b.pending[n].paths)
		n++
	}
	batch := slices.Clone(b.pending[:n])
	b.pending = slices.Delete(b.pending, 0, n)
	b.mu.Unlock()

	b.flush(context.WithoutCancel(ctx), batch)
	for _, o := range batch {
		if o != r {
			o.ready <- struct{}{}
		}
	}
	b.mu.Lock()
	if len(b.pending) > 0 {
		next := b.pending[0]
		next.lead = true
		next.ready <- struct{}{}
	} else {
		b.busy = false
	}
	b.mu.Unlock()
	return r.res, r.err
}

// flush sends batch as one multiRead and sets every request's result.
func (b *readBatcher) flush(ctx context.Context, batch []*readReq) {
	var ops []any
	for _, r := range batch {
		for _, p := range r.paths {
			ops = append(ops, &zk.GetDataOp{Path: p})
		}
	}
	b.requests.Add(1)
	res, err := bounded(ctx, b.s, func(c zkConn) ([]zk.MultiReadResponse, error) { return c.MultiRead(ops...) })
	if err == nil && len(res) != len(ops) {
		err = fmt.Errorf("multiRead: %d replies to %d reads", len(res), len(ops))
	}
	if errors.Is(err, zk.ErrUnimplemented) {
		if !b.single.Swap(true) {
			b.s.log.Info("the server refuses multiRead (ZooKeeper older than 3.6): reading nodes one by one for the rest of the session")
		}
		err = errMultiReadRefused
	}
	if err != nil {
		for _, r := range batch {
			r.err = err
		}
		return
	}
	i := 0
	for _, r := range batch {
		r.res = make([]readResult, len(r.paths))
		for k := range r.paths {
			if o := res[i]; o.Error != nil {
				r.res[k].err = o.Error
			} else if o.Stat == nil {
				r.res[k].err = fmt.Errorf("multiRead: no stat for %s", r.paths[k])
			} else {
				r.res[k].nd = nodeData{o.Data, *o.Stat}
				if n := int64(len(o.Data)); n > b.largest.Load() {
					b.largest.Store(n) // the leader alone writes it
				}
			}
			i++
		}
	}
}
