package coordinator

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Offset commits and releases are coalesced per session (DESIGN.md §10):
// concurrent writes of different claims go to ZooKeeper as one multi, each
// claim's operations still checking that claim's fencing versions. A
// fenced-out claim is dropped from the batch alone and the rest are sent
// again, so one queue lost to a newer owner never fails the commits of the
// others. Like queue/coalesce.go, the first writer to arrive while nothing is
// in flight sends at once (a lone writer pays no extra latency); writers
// arriving meanwhile queue up and the next leader sends them all in one
// multi (cut under maxRequestBytes). A worker's committer does not come
// through here one claim at a time: it hands its whole flush to
// CommitMany (commit_many.go), which packs it and sends it with flush.

// multiReq is one claim's operations in a batch.
type multiReq struct {
	ops  []any
	size int

	res []zk.MultiResponse // this request's responses, when applied
	err error

	ready chan struct{} // result ready, or leadership handed over
	lead  bool
}

// multiBatcher coalesces the multis of one session.
type multiBatcher struct {
	s *Session

	mu      sync.Mutex
	busy    bool
	pending []*multiReq

	// flushes counts the multis sent (tests and figures).
	flushes int64

	// commitMu serialises CommitMany calls (commit_many.go), the only
	// writers that hold several claims' locks at once: two of them locking
	// the same claims in different orders would deadlock.
	commitMu sync.Mutex
	// commitBytes cuts CommitMany's multis (0: batchBytes); tests lower it.
	commitBytes int
}

// multi sends ops (one claim's commit or release) in a coalesced multi and
// returns its responses, or the error of its own failing operation
// (zk.ErrBadVersion, zk.ErrNoNode…), or the error of the whole request (the
// outcome is then unknown for every operation of it). If ctx ends before
// ops were sent it returns ctx.Err() and nothing was sent.
func (b *multiBatcher) multi(ctx context.Context, ops []any) ([]zk.MultiResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &multiReq{ops: ops, ready: make(chan struct{}, 1)}
	for _, op := range ops {
		r.size += opSize(op)
	}
	b.mu.Lock()
	b.pending = append(b.pending, r)
	if b.busy {
		b.mu.Unlock()
		select {
		case <-r.ready:
		case <-ctx.Done():
			b.mu.Lock()
			if i := slices.Index(b.pending, r); i >= 0 && !r.lead {
				b.pending = slices.Delete(b.pending, i, i+1)
				b.mu.Unlock()
				return nil, ctx.Err()
			}
			b.mu.Unlock()
			<-r.ready // in flight, or just made leader
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
	n, size := 0, 0
	for n < len(b.pending) && (n == 0 || size+b.pending[n].size <= batchBytes) {
		size += b.pending[n].size
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

// flush sends batch as one multi and sets every request's result. When an
// operation fails, the request it belongs to gets that operation's error and
// the others (not applied: a multi is all or nothing) are sent again.
func (b *multiBatcher) flush(ctx context.Context, batch []*multiReq) {
	batch = slices.Clone(batch) // dropped requests are deleted from it
	for len(batch) > 0 {
		var ops []any
		for _, r := range batch {
			ops = append(ops, r.ops...)
		}
		b.mu.Lock()
		b.flushes++
		b.mu.Unlock()
		res, err := bounded(ctx, b.s, func(c zkConn) ([]zk.MultiResponse, error) { return c.Multi(ops...) })
		if err == nil {
			i := 0
			for _, r := range batch {
				r.res = res[i : i+len(r.ops)]
				i += len(r.ops)
			}
			return
		}
		failed := failedOp(res)
		if failed < 0 || len(batch) == 1 {
			// The whole request failed (or the lone request's own op).
			for _, r := range batch {
				r.err = err
			}
			return
		}
		// Drop the request holding the failing operation; send the rest.
		i := 0
		for k, r := range batch {
			if failed < i+len(r.ops) {
				r.err = res[failed].Error
				batch = slices.Delete(batch, k, k+1)
				break
			}
			i += len(r.ops)
		}
	}
}

// failedOp returns the index of the operation that failed a multi, or -1
// when the responses name none (the request itself failed). ZooKeeper gives
// the operations before the failing one no error and those after it
// "runtime inconsistency" (rolled back), which the client library reports as
// an unknown error code: the failing one carries a known error.
func failedOp(res []zk.MultiResponse) int {
	for i, r := range res {
		for _, known := range []error{zk.ErrBadVersion, zk.ErrNoNode, zk.ErrNodeExists, zk.ErrNotEmpty,
			zk.ErrNoAuth, zk.ErrBadArguments, zk.ErrInvalidACL, zk.ErrNoChildrenForEphemerals} {
			if errors.Is(r.Error, known) {
				return i
			}
		}
	}
	return -1
}

// requestSize estimates the bytes one op of a multi takes on the wire: the
// path, the data and a fixed overhead (header, ACL, flags, version).
func requestSize(p string, data []byte) int { return len(p) + len(data) + 64 }

// opSize estimates the bytes of one multi operation.
func opSize(op any) int {
	switch o := op.(type) {
	case *zk.SetDataRequest:
		return requestSize(o.Path, o.Data)
	case *zk.CreateRequest:
		return requestSize(o.Path, o.Data)
	case *zk.DeleteRequest:
		return requestSize(o.Path, nil)
	case *zk.CheckVersionRequest:
		return requestSize(o.Path, nil)
	}
	return 64
}
