package coordinator

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// The registry's bucket nodes, /queues/<bucket>, carry the list of their
// queues with what the rebalance leader balances them by (weight, tags), so
// that a leader learns every queue from one read per bucket (1,024 reads at
// any queue count) instead of one read per queue config: at a million
// queues the per-config reads made a new leader's takeover take minutes. A
// bucket is written in the same multi as the config nodes below it (every
// create, update and delete of a queue), checked against the version read,
// so the bucket and the configs never disagree: a writer that lost the race
// reads the bucket again and retries. Workers read a queue's config node
// once, when they claim it, and hear of its changes through the data watch
// of its bucket (ConfigWatch): every config write sets the bucket.

// RegisteredQueue is one queue as its registry bucket lists it: what the
// rebalance leader needs of it.
type RegisteredQueue struct {
	Name   string
	Weight int      // as configured (0: the default)
	Tags   []string // the tags the queue requires; shared between queues with equal tags: read it, never modify it
}

// Registry is a snapshot of the queue registry as the rebalance leader sees
// it: every queue in the bucket nodes. It is immutable; later snapshots
// share the buckets that did not change.
type Registry struct {
	buckets []*packedBucket // by bucket name; each sorted by name
	names   []string        // the buckets' names, sorted; nil for NewRegistry's
	n       int
	// Errs names the buckets whose data could not be decoded; their
	// queues are as last read (none when never read).
	Errs []error
}

// NewRegistry returns a snapshot holding qs (for fakes and tests).
func NewRegistry(qs ...RegisteredQueue) Registry {
	b := bucketData{Weight: map[string]int{}, Tags: map[string][]string{}}
	for _, q := range qs {
		b.Queues = append(b.Queues, q.Name)
		b.Weight[q.Name], b.Tags[q.Name] = q.Weight, q.Tags
	}
	return Registry{buckets: []*packedBucket{b.pack(map[string][]string{})}, n: len(qs)}
}

// Len is the number of queues.
func (r Registry) Len() int { return r.n }

// All yields every queue, bucket by bucket (not in name order).
func (r Registry) All() iter.Seq[RegisteredQueue] {
	return func(yield func(RegisteredQueue) bool) {
		for _, b := range r.buckets {
			for i := range b.len() {
				if !yield(b.at(i)) {
					return
				}
			}
		}
	}
}

// Buckets is the number of registry buckets the snapshot holds; with
// BucketQueues it lets a reader walk the registry a bucket at a time.
func (r Registry) Buckets() int { return len(r.buckets) }

// BucketQueues appends the names of bucket i's queues to dst.
func (r Registry) BucketQueues(dst []string, i int) []string {
	b := r.buckets[i]
	for j := range b.len() {
		dst = append(dst, b.nameAt(j))
	}
	return dst
}

// Has reports whether the registry lists queue.
func (r Registry) Has(queue string) bool {
	if r.names != nil {
		i, ok := slices.BinarySearch(r.names, registryBucket(queue))
		return ok && r.buckets[i].has(queue)
	}
	for _, b := range r.buckets { // NewRegistry's bucket is not sorted
		for i := range b.len() {
			if b.nameAt(i) == queue {
				return true
			}
		}
	}
	return false
}

// bucketData is the JSON of a bucket node: its queues, sorted, and the
// weight and tags of those that have them (docs/zookeeper-layout.md).
type bucketData struct {
	Queues []string            `json:"queues"`
	Weight map[string]int      `json:"weight,omitempty"`
	Tags   map[string][]string `json:"tags,omitempty"`
	// Revs counts the rewrites of a listed queue's config (absent: none
	// since it was listed). A member that follows configs (ConfigWatch)
	// reads again only the configs whose revision moved when the bucket
	// changes, not every followed config of the bucket: at 1,000 new
	// queues a second most buckets change every second, and each member
	// owns queues in all of them.
	Revs map[string]int64 `json:"revs,omitempty"`
}

// decodeBucket reads a bucket node's data; empty data is an empty bucket.
func decodeBucket(p string, data []byte) (bucketData, error) {
	var b bucketData
	if len(data) == 0 {
		return b, nil
	}
	b, err := decodeBucketData(data)
	if err != nil {
		return bucketData{}, fmt.Errorf("decode registry bucket %s: %w", p, err)
	}
	if !slices.IsSorted(b.Queues) {
		slices.Sort(b.Queues)
	}
	b.Queues = slices.Compact(b.Queues)
	for q := range b.Weight {
		if !b.has(q) {
			delete(b.Weight, q) // of a queue not listed: not in the registry
		}
	}
	for q := range b.Tags {
		if !b.has(q) {
			delete(b.Tags, q)
		}
	}
	return b, nil
}

// packedBucket is one bucket's queues as the registry watch keeps them:
// the names concatenated in one string, where each ends, and the weights
// and tags of the few queues that set them — 4 bytes a queue beyond its
// name. A []RegisteredQueue took 48 bytes a queue and a string header and
// allocation per name: about 7 MB of the rebalance leader's live heap at
// 100,000 queues (docs/decisions.md, "Issue 14: one config watch per
// registry bucket").
type packedBucket struct {
	names  string
	ends   []uint32            // ends[i]: where name i ends in names
	weight map[uint32]int      // by index; nil when no queue sets one
	tags   map[uint32][]string // by index; nil when no queue sets them
}

func (p *packedBucket) len() int {
	if p == nil {
		return 0
	}
	return len(p.ends)
}

// at returns queue i (its name shares the bucket's string).
func (p *packedBucket) at(i int) RegisteredQueue {
	return RegisteredQueue{Name: p.nameAt(i), Weight: p.weight[uint32(i)], Tags: p.tags[uint32(i)]}
}

// nameAt returns the name of queue i.
func (p *packedBucket) nameAt(i int) string {
	start := uint32(0)
	if i > 0 {
		start = p.ends[i-1]
	}
	return p.names[start:p.ends[i]]
}

// has reports whether the bucket, sorted by name as decoded, holds q.
func (p *packedBucket) has(q string) bool {
	lo, hi := 0, p.len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p.nameAt(m) < q {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < p.len() && p.nameAt(lo) == q
}

// equal reports whether p and o hold the same queues with the same
// weights and tags.
func (p *packedBucket) equal(o *packedBucket) bool {
	if p.len() == 0 || o.len() == 0 {
		return p.len() == o.len()
	}
	return p.names == o.names && slices.Equal(p.ends, o.ends) && maps.Equal(p.weight, o.weight) &&
		maps.EqualFunc(p.tags, o.tags, slices.Equal)
}

// pack returns the bucket's queues, in the order of b.Queues (sorted when
// decoded), with equal tag sets shared through tags.
func (b bucketData) pack(tags map[string][]string) *packedBucket {
	p := &packedBucket{ends: make([]uint32, len(b.Queues))}
	size := 0
	for _, q := range b.Queues {
		size += len(q)
	}
	var names strings.Builder
	names.Grow(size)
	for i, q := range b.Queues {
		names.WriteString(q)
		p.ends[i] = uint32(names.Len())
		if w := b.Weight[q]; w != 0 {
			if p.weight == nil {
				p.weight = map[uint32]int{}
			}
			p.weight[uint32(i)] = w
		}
		if t := b.Tags[q]; len(t) > 0 {
			key := strings.Join(t, "\x00")
			if shared, ok := tags[key]; ok {
				t = shared
			} else if len(tags) < maxInternedTags {
				tags[key] = t
			}
			if p.tags == nil {
				p.tags = map[uint32][]string{}
			}
			p.tags[uint32(i)] = t
		}
	}
	p.names = names.String()
	return p
}

// maxInternedTags bounds the distinct tag sets a registry watch shares;
// past it a set is kept unshared (memory, not correctness).
const maxInternedTags = 1024

// has reports whether the bucket lists q.
func (b bucketData) has(q string) bool {
	_, ok := slices.BinarySearch(b.Queues, q)
	return ok
}

// put lists cfg's queue with its weight and tags.
func (b *bucketData) put(cfg drover.QueueConfig) {
	if i, ok := slices.BinarySearch(b.Queues, cfg.Name); !ok {
		b.Queues = slices.Insert(b.Queues, i, cfg.Name)
	}
	if cfg.Weight != 0 {
		if b.Weight == nil {
			b.Weight = map[string]int{}
		}
		b.Weight[cfg.Name] = cfg.Weight
	} else {
		delete(b.Weight, cfg.Name)
	}
	if len(cfg.Tags) > 0 {
		if b.Tags == nil {
			b.Tags = map[string][]string{}
		}
		b.Tags[cfg.Name] = slices.Clone(cfg.Tags)
	} else {
		delete(b.Tags, cfg.Name)
	}
}

// remove drops q.
func (b *bucketData) remove(q string) {
	if i, ok := slices.BinarySearch(b.Queues, q); ok {
		b.Queues = slices.Delete(b.Queues, i, i+1)
	}
	delete(b.Weight, q)
	delete(b.Tags, q)
	delete(b.Revs, q)
}

// touch counts a rewrite of listed queue q's config: every write of a
// listed queue's config node calls it in the same multi.
func (b *bucketData) touch(q string) {
	if b.Revs == nil {
		b.Revs = map[string]int64{}
	}
	b.Revs[q]++
}

// mark is what the bucket says of q: listed, and at which revision.
func (b bucketData) mark(q string) bucketMark {
	return bucketMark{known: true, listed: b.has(q), rev: b.Revs[q]}
}

// same reports whether the bucket holds cfg's queue with cfg's weight and
// tags.
func (b bucketData) same(cfg drover.QueueConfig) bool {
	return b.has(cfg.Name) && b.Weight[cfg.Name] == cfg.Weight && slices.Equal(b.Tags[cfg.Name], cfg.Tags)
}

func (b bucketData) clone() bucketData {
	return bucketData{Queues: slices.Clone(b.Queues), Weight: cloneMap(b.Weight), Tags: cloneMap(b.Tags), Revs: cloneMap(b.Revs)}
}

func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Bucket limits: a bucket's data must leave room, in the multi that writes
// it, for the config writes that go with it; its listing (4 bytes plus the
// name per child) must stay under maxRequestBytes too.
const (
	// maxBucketBytes bounds a bucket node's data. At 1,000,000 queues a
	// bucket holds about 1,000 queues: 15 KB at names of 10 bytes, 200 KB
	// at the longest names.
	maxBucketBytes = 384 << 10
	// maxBucketQueues bounds the queues of one bucket, so its children
	// listing stays under maxRequestBytes at the longest names: 1024 ×
	// 2,557 = 2.6 million queues.
	maxBucketQueues = maxRequestBytes / (4 + 200 + 1)
)

// bucketRead is a bucket as read for a write: its data and version, or
// missing.
type bucketRead struct {
	data    bucketData
	version int32
	missing bool
}

// readBucket reads bucket p for a write. Corrupt data is rebuilt from the
// config nodes below it (a writer outside Drover, or a bug, broke it: the
// configs are the truth it is made from).
func (s *Session) readBucket(ctx context.Context, p string) (bucketRead, error) {
	nd, err := getNode(ctx, s, p)
	if errors.Is(err, zk.ErrNoNode) {
		return bucketRead{missing: true}, nil
	}
	if err != nil {
		return bucketRead{}, err
	}
	b, derr := decodeBucket(p, nd.data)
	if derr != nil {
		s.log.Warn("rebuilding a corrupt registry bucket from its queue configs", "bucket", p, "error", derr)
		d := newDirCache(p)
		if err := d.read(ctx, s); err != nil {
			return bucketRead{}, fmt.Errorf("rebuild registry bucket %s: %w", p, err)
		}
		for name, cn := range d.nodes {
			if e := decodeQueue(p+"/"+name, name, cn); e.Err == nil {
				b.put(e.Config)
			} else {
				b.put(drover.QueueConfig{Name: name})
			}
		}
	}
	return bucketRead{data: b, version: nd.stat.Version}, nil
}

// errRetryBucket: the bucket changed between its read and the write.
var errRetryBucket = errors.New("registry bucket changed")

// updateBucket applies one change to the queues of bucket p: change gets
// a copy of the bucket's data to edit and returns the config operations
// that go with it (nil: nothing to write). They are sent as one multi with
// the bucket's new data, checked against the version read; when another
// writer changed the bucket first, it reads again and retries. It returns
// the responses of the config operations, or the error of the one that
// failed.
func (s *Session) updateBucket(ctx context.Context, p string, change func(b *bucketData) ([]any, error)) ([]zk.MultiResponse, error) {
	return s.writeBucket(ctx, p, false, change)
}

// updateBucketNotify is updateBucket for a write the owners of the changed
// queues must hear of: the multi also moves the bucket's notice
// (notice.go). The results are those of change's operations, as
// updateBucket's.
func (s *Session) updateBucketNotify(ctx context.Context, p string, change func(b *bucketData) ([]any, error)) ([]zk.MultiResponse, error) {
	return s.writeBucket(ctx, p, true, change)
}

func (s *Session) writeBucket(ctx context.Context, p string, notify bool, change func(b *bucketData) ([]any, error)) ([]zk.MultiResponse, error) {
	for {
		cur, err := s.readBucket(ctx, p)
		if err != nil {
			return nil, err
		}
		next := cur.data.clone()
		ops, err := change(&next)
		if err != nil || ops == nil {
			return nil, err
		}
		data, err := next.encode()
		if err != nil {
			return nil, fmt.Errorf("encode registry bucket %s: %w", p, err)
		}
		if len(data) > maxBucketBytes {
			return nil, fmt.Errorf("%w: registry bucket %s would hold %d bytes (%d queues), more than %d", ErrTooLarge, p, len(data), len(next.Queues), maxBucketBytes)
		}
		if cur.missing {
			ops = append([]any{&zk.CreateRequest{Path: p, Data: data, Acl: s.acl, Flags: zk.FlagPersistent}}, ops...) // the parent before its children
		} else {
			// Set even when the data does not change (a concurrency or
			// route change): the version moves, which fires the data watch
			// by which the owners of the bucket's queues hear of every
			// config change (ConfigWatch), and the check makes the config
			// written agree with a bucket another writer changed meanwhile.
			// The rebalance leader re-reads the bucket and, finding it the
			// same, does not rebalance.
			ops = append(ops, &zk.SetDataRequest{Path: p, Data: data, Version: cur.version})
		}
		bi, ni := len(ops)-1, -1
		if cur.missing {
			bi = 0
		}
		if notify {
			ops, ni = append(ops, s.noticeOp(p)), len(ops)
		}
		size := 0
		for _, op := range ops {
			size += opSize(op)
		}
		if size > maxRequestBytes {
			return nil, fmt.Errorf("%w: a write of registry bucket %s with its configs would take %d bytes", ErrTooLarge, p, size)
		}
		res, err := bounded(ctx, s, func(c zkConn) ([]zk.MultiResponse, error) { return c.Multi(ops...) })
		if err == nil {
			if ni >= 0 {
				res = res[:ni]
			}
			return slices.Delete(res, bi, bi+1), nil
		}
		switch failed := failedOp(res); {
		case failed == bi:
			// Another writer changed (or created) the bucket first: again.
		case ni >= 0 && failed == ni && errors.Is(res[ni].Error, zk.ErrNoNode):
			// The bucket's first notice: create it, then again.
			if err := s.createNotice(ctx, p); err != nil {
				return nil, err
			}
		case failed >= 0:
			return nil, res[failed].Error
		default:
			return nil, err // the whole request; a lost reply is the caller's to settle
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// WatchRegistry delivers the queue registry now and after every change (a
// queue added, removed, or its weight or tags changed) until ctx ends or
// the session is lost, then closes the channel. Only the latest snapshot is
// kept for a slow reader. It reads and watches the bucket nodes only: one
// read per bucket when it starts, then one per bucket that changed; no
// queue config is read. Only the rebalance leader needs it.
func (q Queues) WatchRegistry(ctx context.Context) <-chan Registry {
	s := q.s
	r := &registryWatch{dir: s.path(queuesDir), buckets: map[string]*watchedBucket{}, tags: map[string][]string{}}
	ch := watchLoop(ctx, s, "registry", func(ctx context.Context, ws *watchSet) (Registry, error) {
		reg, err := r.refresh(ctx, s, ws)
		if err != nil {
			return Registry{}, fmt.Errorf("watch registry: %w", err)
		}
		s.stats.registryRead(r, reg.Len())
		return reg, nil
	})
	context.AfterFunc(ctx, func() { s.stats.registryEnded(r) })
	return ch
}

// registryWatch mirrors the bucket nodes of the registry.
type registryWatch struct {
	dir       string
	delivered bool                      // a snapshot was delivered: deliver only changes now
	buckets   map[string]*watchedBucket // by bucket name
	tags      map[string][]string       // shared tag sets
}

type watchedBucket struct {
	queues *packedBucket
	err    error
}

// refresh re-reads the bucket list when it changed and every bucket whose
// watch fired, decoding only those.
func (r *registryWatch) refresh(ctx context.Context, s *Session, ws *watchSet) (Registry, error) {
	// Every config write sets its bucket (so that owners hear of it), most
	// without changing what the leader balances by: changed tells whether
	// there is anything new to deliver.
	changed := !r.delivered
	if !ws.isArmed(watchKey{watchChildren, r.dir}) {
		names, err := listW(ctx, s, ws, r.dir)
		if err != nil {
			return Registry{}, err
		}
		present := make(map[string]bool, len(names))
		for _, n := range names {
			present[n] = true
			if r.buckets[n] == nil {
				r.buckets[n] = &watchedBucket{}
			}
		}
		for n, b := range r.buckets {
			if !present[n] {
				ws.forget(watchKey{watchNode, r.dir + "/" + n})
				delete(r.buckets, n)
				changed = changed || b.queues.len() > 0
			}
		}
	}
	var stale []string
	for n := range r.buckets {
		if !ws.isArmed(watchKey{watchNode, r.dir + "/" + n}) {
			stale = append(stale, n)
		}
	}
	type read struct {
		nd  *nodeData
		err error
	}
	reads := parallelMap(ctx, stale, func(n string) read {
		nd, err := readNode(ctx, s, ws, r.dir+"/"+n)
		return read{nd, err}
	})
	if err := ctx.Err(); err != nil {
		return Registry{}, err
	}
	var firstErr error
	for i, rd := range reads {
		n := stale[i]
		switch {
		case rd.err != nil:
			if firstErr == nil {
				firstErr = rd.err
			}
		case rd.nd == nil:
			changed = changed || r.buckets[n].queues.len() > 0
			delete(r.buckets, n) // gone: the children watch reports it too
		default:
			b, err := decodeBucket(r.dir+"/"+n, rd.nd.data)
			if err != nil {
				changed = changed || r.buckets[n].err == nil
				r.buckets[n].err = err // keep the queues as last read
				continue
			}
			qs := b.pack(r.tags)
			old := r.buckets[n]
			if old.err == nil && old.queues.equal(qs) {
				continue // set with the same data: a config change the leader does not balance by
			}
			changed = true
			r.buckets[n] = &watchedBucket{queues: qs}
		}
	}
	if firstErr != nil {
		return Registry{}, firstErr
	}
	if !changed {
		return Registry{}, errUnchanged
	}
	r.delivered = true
	names := make([]string, 0, len(r.buckets))
	for n := range r.buckets {
		names = append(names, n)
	}
	sort.Strings(names)
	reg := Registry{buckets: make([]*packedBucket, 0, len(names)), names: names}
	for _, n := range names {
		b := r.buckets[n]
		reg.buckets = append(reg.buckets, b.queues)
		reg.n += b.queues.len()
		if b.err != nil {
			reg.Errs = append(reg.Errs, b.err)
		}
	}
	return reg, nil
}
