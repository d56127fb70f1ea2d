package coordinator

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// Queues.CreateMany: provisioning many queue configurations at once, the
// buckets' groups packed many to a multi (createPacked), then what is left
// bucket by bucket; the cache of the buckets this session last wrote
// (bucketCache).

// createParallelism is how many registry buckets Queues.CreateMany writes at
// once (a read and a multi each, pipelined on the session's connection).
// The family registrar registers a second's new queues in one call, which
// touches most of the 1,024 buckets: at 8 in flight a call of 2,000 queues
// took 3.7 s on a loaded machine, most of it round trips.
const createParallelism = 64

// CreateMany stores many queue configurations. Each bucket's new configs
// are created in one multi with the rewrite of the bucket's list, checked
// against the version read, and the buckets' groups are packed many to a
// multi (up to batchBytes): a family's second of new queues touches most of
// the 1,024 buckets, and a multi per bucket cost ZooKeeper a transaction
// each (createPacked). A bucket whose group could not be written that way
// (another writer changed it, an outcome unknown, a group too large) is
// then written on its own, cut under batchBytes. Queues already configured
// are left as they are. It returns how many it created. It is for
// provisioning thousands of queues at once (Create costs two round trips
// each).
func (q Queues) CreateMany(ctx context.Context, cfgs []drover.QueueConfig) (int, error) {
	s := q.s
	type item = queueItem
	perBucket := map[string][]item{}
	for _, cfg := range cfgs {
		p, data, err := s.encodeQueue(cfg)
		if err != nil {
			return 0, fmt.Errorf("create queues: %w", err)
		}
		perBucket[path.Dir(p)] = append(perBucket[path.Dir(p)], item{p, data, cfg})
	}
	s.registryWrites.lockRegister()
	defer s.registryWrites.unlock()
	packed, maybes := s.createPacked(ctx, perBucket)
	buckets := make([]string, 0, len(perBucket))
	for b := range perBucket {
		buckets = append(buckets, b)
	}
	sort.Strings(buckets)
	type outcome struct {
		created int
		err     error
	}
	outs := parallelMapN(ctx, createParallelism, buckets, func(bp string) outcome {
		o := outcome{}
		todo := perBucket[bp]
		limit := 500        // operations per multi; halved while a write passes a size limit
		maybe := maybes[bp] // sent in a write whose outcome is unknown
		if maybe == nil {
			maybe = map[string]bool{}
		}
		unknown := 0
		for len(todo) > 0 {
			var sent []item
			var present map[string]bool // todo's queues the bucket lists already
			_, err := s.updateBucket(ctx, bp, func(b *bucketData) ([]any, error) {
				sent, present = sent[:0], map[string]bool{}
				// Room for the configs: what the bucket's own data leaves.
				base, _ := b.encode()
				size := len(base)
				var ops []any
				for _, it := range todo {
					if b.has(it.cfg.Name) {
						present[it.cfg.Name] = true // configured already
						continue
					}
					n := requestSize(it.p, it.data) + 2*len(it.cfg.Name) + 16
					for _, tag := range it.cfg.Tags {
						n += len(tag) + 3
					}
					if len(ops) > 0 && (size+n > batchBytes || len(ops) >= limit) {
						continue
					}
					if len(b.Queues) >= maxBucketQueues {
						return nil, fmt.Errorf("%w: registry bucket %s holds %d queues, the most one listing carries", ErrTooLarge, bp, len(b.Queues))
					}
					b.put(it.cfg)
					ops = append(ops, &zk.CreateRequest{Path: it.p, Data: it.data, Acl: s.acl, Flags: zk.FlagPersistent})
					sent = append(sent, it)
					size += n
				}
				return ops, nil
			})
			for q := range present {
				if maybe[q] {
					o.created++ // a write whose reply was lost was applied
				}
			}
			switch {
			case errors.Is(err, ErrTooLarge) && len(sent) > 1:
				limit = len(sent) / 2 // fill the bucket as far as it goes
				sent = nil
			case isUnknownOutcome(err) && ctx.Err() == nil && unknown < 3:
				// The next read of the bucket tells whether it was applied.
				unknown++
				for _, it := range sent {
					maybe[it.cfg.Name] = true
				}
				sent = nil
			case errors.Is(err, zk.ErrNodeExists):
				// A config node without its bucket entry (written outside
				// Drover): one by one, so the others are still created and
				// that one is listed (Create adopts it).
				for _, it := range sent {
					switch err := s.Queues().Create(ctx, it.cfg); {
					case err == nil:
						o.created++
					case !errors.Is(err, ErrQueueExists):
						o.err = err
						return o
					}
				}
			case err != nil:
				o.err = err
				return o
			case len(sent) == 0:
				return o // every remaining queue is configured already
			default:
				o.created += len(sent)
			}
			done := present
			for _, it := range sent {
				done[it.cfg.Name] = true
			}
			rest := todo[:0:0]
			for _, it := range todo {
				if !done[it.cfg.Name] {
					rest = append(rest, it)
				}
			}
			todo = rest
		}
		return o
	})
	created := packed
	var errs []error
	for _, o := range outs {
		created += o.created
		errs = append(errs, o.err)
	}
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return created, fmt.Errorf("create queues: %w", err)
	}
	return created, nil
}

// queueItem is one queue config to create: its node path and data.
type queueItem struct {
	p    string
	data []byte
	cfg  drover.QueueConfig
}

// bucketCache keeps the registry buckets as CreateMany last wrote them,
// with their versions (from the multi's replies), so that the next call
// reads only the buckets it did not write: the family registrar calls it
// every second or so with queues in most buckets, and it is most of the
// time the only writer of the registry. An entry another writer made
// stale fails its multi on the version check and is dropped; the
// bucket-by-bucket pass then reads the bucket. It holds at most the 1,024
// buckets' lists of queue names, on the session that registers queues.
type bucketCache struct {
	mu sync.Mutex
	m  map[string]bucketRead
}

func (c *bucketCache) get(bp string) (bucketRead, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[bp]
	if ok {
		r.data = r.data.clone() // the caller edits it
	}
	return r, ok
}

func (c *bucketCache) put(bp string, r bucketRead) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]bucketRead{}
	}
	c.m[bp] = r
}

func (c *bucketCache) drop(bp string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, bp)
}

// createPackedInFlight is how many packed multis of CreateMany are sent
// at once.
const createPackedInFlight = 4

// createPacked is CreateMany's first pass: it reads every bucket of
// perBucket (or takes it as this session last wrote it), builds each
// bucket's group (the creates of its new configs, then the bucket's
// rewrite checked against the version read) and sends the groups packed
// many to a multi. The buckets whose group was written are removed from
// perBucket, counting their creates. A multi that fails on one group (the
// bucket changed behind this session) wrote nothing: that bucket is left
// for the bucket-by-bucket pass and the multi's other groups are sent
// again, a few rounds at most. maxRounds bounds them; what is left then,
// or was sent in a multi whose outcome is unknown (maybes names those
// configs: that pass's read of the bucket tells), goes bucket by bucket.
func (s *Session) createPacked(ctx context.Context, perBucket map[string][]queueItem) (created int, maybes map[string]map[string]bool) {
	const maxRounds = 3
	maybes = map[string]map[string]bool{}
	alone := map[string]bool{} // for the bucket-by-bucket pass
	for round := 0; round < maxRounds && ctx.Err() == nil; round++ {
		var buckets []string
		for b := range perBucket {
			if !alone[b] {
				buckets = append(buckets, b)
			}
		}
		if len(buckets) == 0 {
			break
		}
		sort.Strings(buckets)
		multis := s.packBuckets(ctx, buckets, perBucket, alone)
		if len(multis) == 0 {
			break
		}
		type sent struct {
			res []zk.MultiResponse
			err error
		}
		outs := parallelMapN(ctx, createPackedInFlight, multis, func(gs []createGroup) sent {
			var ops []any
			for _, g := range gs {
				ops = append(ops, g.ops...)
			}
			res, err := bounded(ctx, s, func(c zkConn) ([]zk.MultiResponse, error) { return c.Multi(ops...) })
			return sent{res, err}
		})
		for i, gs := range multis {
			res, err := outs[i].res, outs[i].err
			failed := failedOp(res) // the op that failed the multi, or -1
			first := 0              // the group's first op in the multi
			for _, g := range gs {
				switch {
				case err == nil:
					created += len(g.sent)
					delete(perBucket, g.bucket)
					version := int32(0) // the bucket was created by this multi
					if g.at > 0 && first+g.at < len(res) && res[first+g.at].Stat != nil {
						version = res[first+g.at].Stat.Version
					}
					s.written.put(g.bucket, bucketRead{data: g.next, version: version})
				case isUnknownOutcome(err):
					s.written.drop(g.bucket)
					alone[g.bucket] = true
					m := map[string]bool{}
					for _, q := range g.sent {
						m[q] = true
					}
					maybes[g.bucket] = m
				case failed < 0 || (failed >= first && failed < first+len(g.ops)):
					// This group failed the multi (its bucket changed behind
					// this session, or a config node was written outside
					// Drover), or which one did is not known.
					s.written.drop(g.bucket)
					alone[g.bucket] = true
				}
				// Otherwise the group was not written only because another
				// one failed the multi: sent again next round.
				first += len(g.ops)
			}
		}
	}
	return created, maybes
}

// createGroup is one bucket's part of a packed multi: the creates of its
// new configs, then the bucket's rewrite (or, for a missing bucket, its
// creation first).
type createGroup struct {
	bucket string
	ops    []any
	size   int
	sent   []string   // the queues created
	next   bucketData // the bucket as written
	at     int        // the bucket's rewrite among ops (0: created)
}

// packBuckets builds the groups of buckets (sorted) and packs them into
// multis of at most batchBytes. A bucket it cannot read or whose group is
// too large for packing is marked alone; one with nothing to create is
// removed from perBucket.
func (s *Session) packBuckets(ctx context.Context, buckets []string, perBucket map[string][]queueItem, alone map[string]bool) [][]createGroup {
	reads := parallelMapN(ctx, createParallelism, buckets, func(bp string) *bucketRead {
		if r, ok := s.written.get(bp); ok && !slices.ContainsFunc(perBucket[bp], func(it queueItem) bool { return r.data.has(it.cfg.Name) }) {
			// As this session wrote it last: the multi checks the version.
			// A queue it lists is read afresh instead, since "configured
			// already" is decided without a write to check it (another
			// writer may have deleted or retired the queue since).
			return &r
		}
		r, err := s.readBucket(ctx, bp)
		if err != nil {
			return nil
		}
		return &r
	})
	var multis [][]createGroup
	size := 0
	for i, bp := range buckets {
		cur := reads[i]
		if cur == nil {
			alone[bp] = true // the bucket-by-bucket pass reads it again
			continue
		}
		next := cur.data.clone()
		g := createGroup{bucket: bp}
		for _, it := range perBucket[bp] {
			if next.has(it.cfg.Name) {
				continue // configured already
			}
			next.put(it.cfg)
			g.ops = append(g.ops, &zk.CreateRequest{Path: it.p, Data: it.data, Acl: s.acl, Flags: zk.FlagPersistent})
			g.sent = append(g.sent, it.cfg.Name)
		}
		if len(g.ops) == 0 {
			delete(perBucket, bp) // every queue of it is configured already
			continue
		}
		g.next = next
		data, err := next.encode()
		if err != nil || len(data) > maxBucketBytes || len(next.Queues) > maxBucketQueues {
			alone[bp] = true // the bucket-by-bucket pass reports it
			continue
		}
		if cur.missing {
			g.ops = append([]any{&zk.CreateRequest{Path: bp, Data: data, Acl: s.acl, Flags: zk.FlagPersistent}}, g.ops...)
		} else {
			g.at = len(g.ops)
			g.ops = append(g.ops, &zk.SetDataRequest{Path: bp, Data: data, Version: cur.version})
		}
		for _, op := range g.ops {
			g.size += opSize(op)
		}
		if g.size > batchBytes/2 {
			alone[bp] = true // cut by the bucket-by-bucket pass
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
