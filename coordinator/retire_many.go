package coordinator

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// Queues.RetireMany: the family registrar's retire sweep retires a
// second's idle queues at once (docs/decisions.md, "Issue 40: retirement
// is batched"). The checks are Retire's, queue by queue; the deletes of
// the config nodes are packed, a bucket's group to a part of a multi, as
// CreateMany packs its creates.

// RetireCandidate is a queue a caller would retire as a queue of Family.
type RetireCandidate struct {
	Queue  string
	Family string
}

// retireRounds bounds the rounds of packed multis of one RetireMany; what
// is left then goes queue by queue.
const retireRounds = 3

// maxRetireYields bounds the times one RetireMany hands its turn to
// registrations (a round cut by one is not counted).
const maxRetireYields = 16

// RetireMany is Retire for many queues, with the same checks and the same
// guarantees for each: a candidate's config is read first (one read per
// queue, in parallel), and only one that names the candidate's family
// goes to empty; empty gets those (in the order of cands) and returns, for
// each, whether it retired the queue's Redis keys (it runs between the
// reads and the deletes, as Retire's does). The config nodes of those it
// retired are deleted, each checked against the version read, with their
// registry bucket entries and config notices: each bucket's deletes and
// rewrite form a group, and the groups are packed many to a multi (up to
// batchBytes), so a sweep of 1,000 queues costs ZooKeeper a few multis,
// not a thousand. A queue an operator reconfigured or deleted meanwhile
// fails its delete's version check and is kept (reported false), and its
// bucket's other queues are sent again; a bucket another writer changed
// is read again. What is left after a few rounds (or was in a multi whose
// reply was lost) is settled queue by queue.
//
// It returns, for each candidate, whether its config is gone by this
// call, and an error joining what failed (empty's error, a read, a write):
// a candidate whose write failed is reported false. It blocks on the
// reads and multis, each bounded by the session's request timeout.
func (q Queues) RetireMany(ctx context.Context, cands []RetireCandidate, empty func(ctx context.Context, cands []RetireCandidate) ([]bool, error)) ([]bool, error) {
	s := q.s
	done := make([]bool, len(cands))
	type read struct {
		version int32
		ok      bool
		err     error
	}
	reads := parallelMap(ctx, cands, func(c RetireCandidate) read {
		e, err := s.Queues().Get(ctx, c.Queue)
		switch {
		case errors.Is(err, drover.ErrQueueNotFound):
			return read{}
		case err != nil:
			return read{err: fmt.Errorf("retire queue %s: %w", c.Queue, err)}
		}
		// Configured on its own, or by another family: kept.
		return read{version: e.Version, ok: e.Config.Family == c.Family && c.Family != ""}
	})
	var errs []error
	var passed []RetireCandidate
	var at []int // passed[k] is cands[at[k]]
	for i, r := range reads {
		errs = append(errs, r.err)
		if r.ok {
			passed = append(passed, cands[i])
			at = append(at, i)
		}
	}
	if len(passed) == 0 {
		return done, errors.Join(append(errs, ctx.Err())...)
	}
	emptied, err := empty(ctx, passed)
	errs = append(errs, err)
	perBucket := map[string][]retiree{}
	for k, c := range passed {
		if k < len(emptied) && emptied[k] {
			p := s.queueNodePath(c.Queue)
			perBucket[path.Dir(p)] = append(perBucket[path.Dir(p)], retiree{index: at[k], queue: c.Queue, path: p, version: reads[at[k]].version})
		}
	}
	s.registryWrites.lockRetire()
	defer s.registryWrites.unlock()
	left := s.retirePacked(ctx, perBucket, done)
	errs = append(errs, s.retireLeft(ctx, left, done))
	return done, errors.Join(append(errs, ctx.Err())...)
}

// retireLeftInFlight bounds the buckets whose left retirees are settled
// at once (a read and a multi per queue, on the session's connection).
const retireLeftInFlight = 16

// retireLeft settles the retirees the packed rounds left, queue by queue
// (retireAlone), marking each deleted one in done: the buckets in
// parallel, a bucket's queues one after another (they rewrite the same
// bucket node). Settled one after another they took a sweep step minutes
// when a registration kept changing the buckets under the packed multis.
func (s *Session) retireLeft(ctx context.Context, left []retiree, done []bool) error {
	byBucket := map[string][]retiree{}
	var buckets []string
	for _, r := range left {
		b := path.Dir(r.path)
		if byBucket[b] == nil {
			buckets = append(buckets, b)
		}
		byBucket[b] = append(byBucket[b], r)
	}
	var mu sync.Mutex
	var errs []error
	parallelMapN(ctx, retireLeftInFlight, buckets, func(b string) struct{} {
		for _, r := range byBucket[b] {
			ok, err := s.retireAlone(ctx, r)
			mu.Lock()
			done[r.index] = ok
			errs = append(errs, err)
			mu.Unlock()
		}
		return struct{}{}
	})
	return errors.Join(errs...)
}

// retiree is a queue whose config RetireMany deletes: at version, unless
// an operator changed it.
type retiree struct {
	index   int // in RetireMany's cands
	queue   string
	path    string
	version int32
	// unknown: sent in a multi whose reply was lost; a config found
	// gone was deleted by it.
	unknown bool
}

// retireGroup is one bucket's part of a packed multi: the deletes of its
// retirees' configs, the bucket's rewrite, its notice.
type retireGroup struct {
	bucket string
	ops    []any
	size   int
	queues []retiree
	next   bucketData
}

// retirePacked deletes the configs of perBucket's retirees in packed
// multis, marking each deleted one in done, for up to retireRounds rounds,
// and returns those left for retireAlone.
func (s *Session) retirePacked(ctx context.Context, perBucket map[string][]retiree, done []bool) []retiree {
	var left []retiree
	yields := 0
	for round := 0; round < retireRounds && len(perBucket) > 0 && ctx.Err() == nil; round++ {
		buckets := make([]string, 0, len(perBucket))
		for b := range perBucket {
			buckets = append(buckets, b)
		}
		sort.Strings(buckets)
		multis := s.packRetires(ctx, buckets, perBucket, &left)
		// A wave of multis at a time; between waves a registration
		// waiting takes the turn, and the rest is packed again from the
		// buckets as they are then (a round not counted: the waves sent
		// made progress).
		for len(multis) > 0 {
			wave := multis[:min(createPackedInFlight, len(multis))]
			multis = multis[len(wave):]
			s.retireWave(ctx, wave, perBucket, done, &left)
			if len(multis) > 0 && yields < maxRetireYields && s.registryWrites.yield() {
				yields++
				round--
				break
			}
		}
	}
	for _, rs := range perBucket {
		left = append(left, rs...)
	}
	return left
}

// retireWave sends multis at once and settles each group by its reply:
// marked done, sent again (left in perBucket), or left for retireAlone.
func (s *Session) retireWave(ctx context.Context, multis [][]retireGroup, perBucket map[string][]retiree, done []bool, left *[]retiree) {
	outs := parallelMapN(ctx, createPackedInFlight, multis, func(gs []retireGroup) multiOutcome {
		var ops []any
		for _, g := range gs {
			ops = append(ops, g.ops...)
		}
		res, err := bounded(ctx, s, func(c zkConn) ([]zk.MultiResponse, error) { return c.Multi(ops...) })
		return multiOutcome{res, err}
	})
	for i, gs := range multis {
		res, err := outs[i].res, outs[i].err
		failed := failedOp(res)
		first := 0
		for _, g := range gs {
			bi := len(g.queues) // the bucket's rewrite, then its notice
			switch {
			case err == nil:
				for _, r := range g.queues {
					done[r.index] = true
				}
				delete(perBucket, g.bucket)
				if st := res[first+bi].Stat; st != nil {
					// As written: CreateMany's next registration need not
					// read it (and must not list these queues).
					s.written.put(g.bucket, bucketRead{data: g.next, version: st.Version})
				} else {
					s.written.drop(g.bucket)
				}
			case failed < 0:
				// The whole request failed; its outcome is unknown when
				// the reply was lost. Settled queue by queue.
				s.written.drop(g.bucket)
				for _, r := range g.queues {
					r.unknown = r.unknown || isUnknownOutcome(err)
					*left = append(*left, r)
				}
				delete(perBucket, g.bucket)
			case failed >= first && failed < first+bi:
				// An operator reconfigured or deleted this queue: kept.
				// The bucket's others go again.
				k := failed - first
				if !isVersionConflict(res[failed].Error) {
					*left = append(*left, g.queues[k])
				}
				perBucket[g.bucket] = append(g.queues[:k:k], g.queues[k+1:]...)
				if len(perBucket[g.bucket]) == 0 {
					delete(perBucket, g.bucket)
				}
			case failed == first+bi:
				s.written.drop(g.bucket) // changed by another writer: read it again
			case failed == first+bi+1 && errors.Is(res[failed].Error, zk.ErrNoNode):
				// A bucket's first notice: a multi's buckets have theirs
				// created together (a registry of new buckets has
				// none), then the multi goes again.
				s.createNotices(ctx, gs, perBucket, left)
			}
			// Otherwise another group failed the multi: this one goes
			// again as it is.
			first += len(g.ops)
		}
	}
}

// createNotices creates the notices of gs's buckets (those that exist
// are left); a bucket whose notice cannot be created leaves perBucket for
// left.
func (s *Session) createNotices(ctx context.Context, gs []retireGroup, perBucket map[string][]retiree, left *[]retiree) {
	errs := parallelMapN(ctx, createParallelism, gs, func(g retireGroup) error { return s.createNotice(ctx, g.bucket) })
	for i, g := range gs {
		if errs[i] != nil {
			*left = append(*left, perBucket[g.bucket]...)
			delete(perBucket, g.bucket)
		}
	}
}

// multiOutcome is the reply of one multi.
type multiOutcome struct {
	res []zk.MultiResponse
	err error
}

// packRetires builds the groups of buckets (sorted) and packs them into
// multis of at most batchBytes. A bucket it cannot read, or whose group
// is too large to pack, leaves perBucket for left (retireAlone).
func (s *Session) packRetires(ctx context.Context, buckets []string, perBucket map[string][]retiree, left *[]retiree) [][]retireGroup {
	reads := parallelMapN(ctx, createParallelism, buckets, func(bp string) *bucketRead {
		if r, ok := s.written.get(bp); ok {
			return &r // as this session wrote it last: the multi checks the version
		}
		r, err := s.readBucket(ctx, bp)
		if err != nil || r.missing {
			return nil
		}
		return &r
	})
	var multis [][]retireGroup
	size := 0
	for i, bp := range buckets {
		cur := reads[i]
		if cur == nil {
			*left = append(*left, perBucket[bp]...)
			delete(perBucket, bp)
			continue
		}
		g := retireGroup{bucket: bp, queues: perBucket[bp], next: cur.data.clone()}
		for _, r := range g.queues {
			g.next.remove(r.queue)
			g.ops = append(g.ops, &zk.DeleteRequest{Path: r.path, Version: r.version})
		}
		data, err := g.next.encode()
		if err != nil || len(data) > maxBucketBytes {
			*left = append(*left, perBucket[bp]...)
			delete(perBucket, bp)
			continue
		}
		g.ops = append(g.ops, &zk.SetDataRequest{Path: bp, Data: data, Version: cur.version}, s.noticeOp(bp))
		for _, op := range g.ops {
			g.size += opSize(op)
		}
		if g.size > batchBytes/2 {
			*left = append(*left, perBucket[bp]...) // cut by retireAlone
			delete(perBucket, bp)
			continue
		}
		if len(multis) == 0 || size+g.size > batchBytes {
			multis, size = append(multis, nil), 0
		}
		multis[len(multis)-1] = append(multis[len(multis)-1], g)
		size += g.size
	}
	return multis
}

// retireAlone settles one retiree on its own: a config found gone after
// a lost reply was deleted by it; one at another version was changed by
// an operator (kept); one as read is deleted as Retire deletes it.
func (s *Session) retireAlone(ctx context.Context, r retiree) (bool, error) {
	e, err := s.Queues().Get(ctx, r.queue)
	switch {
	case errors.Is(err, drover.ErrQueueNotFound):
		return r.unknown, nil
	case err != nil:
		return false, fmt.Errorf("retire queue %s: %w", r.queue, err)
	case e.Version != r.version:
		return false, nil
	}
	return s.deleteRetired(ctx, r.queue, r.version)
}

// deleteRetired deletes queue's config, at version, with its bucket entry
// and notice, in one multi; false: the version check failed (an operator
// changed or deleted it).
func (s *Session) deleteRetired(ctx context.Context, queue string, version int32) (bool, error) {
	p := s.queueNodePath(queue)
	// CreateMany's cache of the buckets this session wrote would list the
	// queue still, and skip it as configured when it comes back (no multi
	// sent, so no version check tells it otherwise).
	defer s.written.drop(path.Dir(p))
	_, err := s.updateBucketNotify(ctx, path.Dir(p), func(b *bucketData) ([]any, error) {
		b.remove(queue)
		return []any{&zk.DeleteRequest{Path: p, Version: version}}, nil
	})
	if isVersionConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("retire queue %s: %w", queue, err)
	}
	return true, nil
}
