package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// ConfigWatch follows the configurations of a changing set of queues — the
// ones a member owns. A member's reconciler reads a queue's configuration
// once, when it claims the queue (Read), and then hears of changes only
// (Changes).
//
// It watches the buckets' config notices, not the configs: one data watch
// per notice /notices/<bucket> of a bucket that holds a followed queue (at
// most 1,024). Every write of a config that its owner must hear of moves
// the notice in the same multi; the registration of new queues does not
// (notice.go), so a family's thousand new queues a second wake no member.
// When a notice's watch fires, the watch is armed again first, then the
// bucket is read, and the followed queues of the bucket that it says
// changed (listed or not, and the revision of their config) are read
// (plain reads, no watch) and delivered when their config node changed
// since last read (its Mzxid grew). So a change made while the watch was
// down — between the event and the new watch — is read too. A followed
// queue whose config is missing (deleted, or not created yet) is read
// again every missingPoll, since a registration that creates it again
// moves no notice. A data watch per followed config cost the
// go-zookeeper library a watcher entry and a channel per queue, and the
// session a routing entry per path: about 13 MB at 25,000 queues
// (docs/decisions.md, "Issue 14: one config watch per registry bucket").
// Watching the whole registry would cost every member a read and a watch
// per queue in the fleet.
type ConfigWatch struct {
	s   *Session
	ws  *watchSet
	out chan QueueEntry

	mu      sync.Mutex
	buckets map[string]*followedBucket // by bucket name (three hex digits)
	dirty   map[string]struct{}        // followed queues to read again
	missing map[string]struct{}        // followed queues whose config was missing when last read
	pending map[string]pendingConfig   // undelivered, latest per queue
	order   []string                   // delivery order of pending (may name delivered ones)
}

// followedBucket is a registry bucket holding followed queues.
type followedBucket struct {
	// seen is the followed queues, sorted by name, each with its config's
	// Mzxid as last read: 0 when the node was missing, readingConfig while
	// Read reads it. A sorted slice takes a third of a map's memory.
	seen []followedQueue
	// arming is closed when the bucket's watch, being armed, is armed (or
	// the request failed); nil when nobody arms it.
	arming chan struct{}
	// gen counts the times the bucket's watch was armed: a Read that sees
	// it move while reading may have read the config before a change.
	gen uint64
}

type followedQueue struct {
	name  string
	mzxid int64
	// mark is what the bucket said of the queue at the watch's last read
	// of it (unknown until the first read after the queue is followed):
	// the watch reads the config again only when the bucket says
	// otherwise.
	mark bucketMark
}

// bucketMark is what a registry bucket says of one queue.
type bucketMark struct {
	known  bool  // read from the bucket
	listed bool  // the bucket lists the queue
	rev    int64 // its config's revision (bucketData.Revs)
}

func (b *followedBucket) find(q string) (int, bool) {
	return slices.BinarySearchFunc(b.seen, q, func(f followedQueue, q string) int { return strings.Compare(f.name, q) })
}

// get returns q's Mzxid as last read, and whether q is followed.
func (b *followedBucket) get(q string) (int64, bool) {
	if i, ok := b.find(q); ok {
		return b.seen[i].mzxid, true
	}
	return 0, false
}

// set follows q, at Mzxid mzxid.
func (b *followedBucket) set(q string, mzxid int64) {
	i, ok := b.find(q)
	if ok {
		b.seen[i].mzxid = mzxid
		return
	}
	b.seen = slices.Insert(b.seen, i, followedQueue{name: q, mzxid: mzxid})
}

// reading reports whether Read reads q's config now.
func (b *followedBucket) reading(q string) bool {
	mz, ok := b.get(q)
	return ok && mz == readingConfig
}

// remove stops following q.
func (b *followedBucket) remove(q string) {
	if i, ok := b.find(q); ok {
		b.seen = slices.Delete(b.seen, i, i+1)
	}
}

// pendingConfig is an entry to deliver and the Mzxid it was read at.
type pendingConfig struct {
	e     QueueEntry
	mzxid int64
}

// readingConfig marks a queue whose config Read is reading: the watch's
// own reads leave it alone.
const readingConfig = -1

// missingPoll is how often a followed queue whose config is missing is
// read again: its creation by a registration moves no notice. Such a queue
// is rare and short-lived (the rebalance leader moves a queue that left
// the registry off its member).
const missingPoll = 2 * time.Second

// seen records q's config as read at mzxid in b (0: missing).
func (w *ConfigWatch) seen(b *followedBucket, q string, mzxid int64) {
	b.set(q, mzxid)
	if mzxid == 0 {
		if _, ok := w.missing[q]; !ok {
			w.missing[q] = struct{}{}
			w.ws.signal() // run sets the poll's timer
		}
	} else {
		delete(w.missing, q)
	}
}

// WatchConfigs starts a ConfigWatch that follows no queue yet. It runs
// until ctx ends or the session is lost; then Changes is closed.
func (q Queues) WatchConfigs(ctx context.Context) *ConfigWatch {
	s := q.s
	w := &ConfigWatch{s: s, ws: newWatchSet(s.hub), out: make(chan QueueEntry),
		buckets: map[string]*followedBucket{}, dirty: map[string]struct{}{}, missing: map[string]struct{}{}, pending: map[string]pendingConfig{}}
	go w.run(ctx)
	return w
}

// Read reads queue's configuration and follows it from now on: a later
// change is delivered on Changes. An entry whose config node is missing
// comes with Err wrapping drover.ErrQueueNotFound (its creation is
// followed), a corrupt one with Err naming the node; the error return is
// for a read that failed (the queue is then not followed). Entries with
// equal task routes share one QueueConfig.Tasks map: read it, never modify it.
func (w *ConfigWatch) Read(ctx context.Context, queue string) (QueueEntry, error) {
	if err := drover.ValidateQueueName(queue); err != nil {
		return QueueEntry{}, fmt.Errorf("read queue config: %w", err)
	}
	bn := registryBucket(queue)
	// The bucket's watch must be armed before the config is read: a change
	// after the read then fires it.
	var gen uint64
	for {
		w.mu.Lock()
		b := w.buckets[bn]
		if b == nil {
			b = &followedBucket{}
			w.buckets[bn] = b
		}
		if ch := b.arming; ch != nil {
			w.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				w.dropIfEmpty(bn)
				return QueueEntry{}, fmt.Errorf("read queue config %s: %w", queue, ctx.Err())
			}
		}
		if !w.ws.isArmed(w.bucketKey(bn)) {
			w.mu.Unlock()
			if err := w.armBucket(ctx, bn); err != nil {
				w.dropIfEmpty(bn)
				return QueueEntry{}, fmt.Errorf("read queue config %s: %w", queue, err)
			}
			continue
		}
		b.set(queue, readingConfig)
		gen = b.gen
		delete(w.dirty, queue)
		w.mu.Unlock()
		break
	}
	e, mzxid, err := w.s.readQueueConfig(ctx, queue)
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buckets[bn]
	if b == nil || !b.reading(queue) {
		// Forgotten meanwhile (and perhaps read again): this read is not
		// the one that follows it.
		if err != nil {
			return QueueEntry{}, fmt.Errorf("read queue config %s: %w", queue, err)
		}
		return e, nil
	}
	if err != nil {
		b.remove(queue)
		delete(w.missing, queue)
		w.dropIfEmptyLocked(bn)
		return QueueEntry{}, fmt.Errorf("read queue config %s: %w", queue, err)
	}
	w.seen(b, queue, mzxid)
	delete(w.pending, queue) // older than this read
	if b.gen != gen || !w.ws.isArmed(w.bucketKey(bn)) {
		// The bucket's watch fired while the config was read: the read
		// may predate the change. Read it again; delivered if newer.
		w.dirty[queue] = struct{}{}
		w.ws.signal()
	}
	return e, nil
}

// Forget stops following queue. The bucket's watch stays armed on the
// server until it fires (ZooKeeper cannot remove one); the event is then
// ignored when the bucket holds no followed queue.
func (w *ConfigWatch) Forget(queue string) {
	bn := registryBucket(queue)
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.dirty, queue)
	delete(w.pending, queue)
	delete(w.missing, queue)
	if b := w.buckets[bn]; b != nil {
		b.remove(queue)
		w.dropIfEmptyLocked(bn)
	}
}

// Changes delivers the entry of a followed queue after each change of its
// configuration. The reader must keep reading: undelivered entries queue up
// (one per queue, the latest). A deletion is not delivered (the queue
// leaves the assignment); a later creation is.
func (w *ConfigWatch) Changes() <-chan QueueEntry { return w.out }

// bucketKey is the watch of bucket bn's config notice.
func (w *ConfigWatch) bucketKey(bn string) watchKey {
	return watchKey{watchNode, w.s.path(noticesDir, bn)}
}

func (w *ConfigWatch) dropIfEmpty(bn string) {
	w.mu.Lock()
	w.dropIfEmptyLocked(bn)
	w.mu.Unlock()
}

// dropIfEmptyLocked forgets bucket bn when it holds no followed queue and
// nobody arms its watch.
func (w *ConfigWatch) dropIfEmptyLocked(bn string) {
	b := w.buckets[bn]
	if b == nil || len(b.seen) > 0 || b.arming != nil {
		return
	}
	delete(w.buckets, bn)
	w.ws.forget(w.bucketKey(bn))
}

// armBucket arms the data (or existence) watch of bucket bn's notice, then
// reads the bucket; the followed queues whose config it says changed are
// then read again (a change may have come while the watch was down).
func (w *ConfigWatch) armBucket(ctx context.Context, bn string) error {
	w.mu.Lock()
	b := w.buckets[bn]
	if b == nil || b.arming != nil || w.ws.isArmed(w.bucketKey(bn)) {
		w.mu.Unlock()
		return nil // armed, or being armed, by another
	}
	ch := make(chan struct{})
	b.arming = ch
	// The bucket is read only when a followed queue has a config read to
	// compare with it: the first arming of a bucket (Read's, before it
	// reads its config) costs one request, as it did when the watch was
	// on the bucket itself.
	compare := slices.ContainsFunc(b.seen, func(f followedQueue) bool { return f.mzxid != readingConfig })
	w.mu.Unlock()
	k := w.bucketKey(bn)
	w.ws.prepare(k)
	// The notice's data is nothing: ExistsW arms the data watch of a
	// notice that exists and the existence watch of one not created yet
	// (a bucket no config write has changed), one request either way.
	_, err := bounded(ctx, w.s, func(c zkConn) (bool, error) {
		ok, _, _, err := c.ExistsW(k.path)
		return ok, err
	})
	var data bucketData
	decoded := false
	if err == nil && compare {
		// Armed: a change from now on fires it. A bucket that cannot be
		// read or decoded says nothing: every followed queue is read.
		bp := w.s.path(queuesDir, bn)
		nd, rerr := getIfAny(ctx, w.s, bp)
		decoded = rerr == nil // a missing bucket lists nothing
		if rerr == nil && nd != nil {
			var derr error
			data, derr = decodeBucket(bp, nd.data)
			decoded = derr == nil
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	b.arming = nil
	close(ch)
	if err != nil {
		w.ws.cancel(k)
		return err
	}
	w.ws.armed(k)
	b.gen++
	// Read again the followed configs the bucket says changed (or that
	// were never compared with it): every config write rewrites its
	// bucket in the same multi, with the queue's revision moved, so the
	// bucket's data names every change, including one made while the
	// watch was down. The other queues of the bucket are left alone.
	for i := range b.seen {
		f := &b.seen[i]
		if f.mzxid == readingConfig {
			continue // Read reads it; compared at the next event
		}
		m := bucketMark{}
		if decoded {
			m = data.mark(f.name)
		}
		if !decoded || m != f.mark {
			w.dirty[f.name] = struct{}{}
		}
		f.mark = m
	}
	if len(w.dirty) > 0 {
		w.ws.signal() // for run, when Read armed it
	}
	return nil
}

// run re-arms the watches of the buckets that fired, reads their followed
// queues again and delivers those that changed.
func (w *ConfigWatch) run(ctx context.Context) {
	defer close(w.out)
	defer w.ws.close()
	var (
		retry  <-chan time.Time
		pollAt time.Time // when the missing configs are read again
	)
	for {
		// A bucket holding followed queues whose watch is neither armed nor
		// being armed fired: arm it again (which marks its queues to be
		// read). Watches fire rarely (an operator changed a config), so
		// the pass over at most 1,024 buckets is cheap.
		w.mu.Lock()
		var fired []string
		for bn, b := range w.buckets {
			if b.arming == nil && !w.ws.isArmed(w.bucketKey(bn)) {
				fired = append(fired, bn)
			}
		}
		w.mu.Unlock()
		failed := false
		for _, err := range parallelMap(ctx, fired, func(bn string) error { return w.armBucket(ctx, bn) }) {
			if err != nil {
				failed = true
			}
		}
		if ctx.Err() != nil || w.s.Err() != nil {
			return
		}
		w.mu.Lock()
		todo := make([]string, 0, len(w.dirty))
		for q := range w.dirty {
			todo = append(todo, q)
		}
		w.dirty = map[string]struct{}{} // a cleared map keeps its size: thousands after a bulk change
		w.mu.Unlock()
		type read struct {
			e     QueueEntry
			mzxid int64
			err   error
		}
		reads := parallelMap(ctx, todo, func(q string) read {
			e, mzxid, err := w.s.readQueueConfig(ctx, q)
			return read{e, mzxid, err}
		})
		if ctx.Err() != nil || w.s.Err() != nil {
			return
		}
		w.mu.Lock()
		for i, r := range reads {
			q := todo[i]
			b := w.buckets[registryBucket(q)]
			if b == nil {
				continue
			}
			seen, followed := b.get(q)
			switch {
			case !followed || seen == readingConfig:
				// Forgotten, or Read reads it now.
			case r.err != nil:
				w.dirty[q] = struct{}{}
				failed = true
			case r.mzxid > seen:
				w.seen(b, q, r.mzxid)
				if _, dup := w.pending[q]; !dup {
					w.order = append(w.order, q)
				}
				w.pending[q] = pendingConfig{r.e, r.mzxid}
			case r.mzxid == 0 && seen > 0:
				w.seen(b, q, 0) // deleted: not delivered, its creation will be
			}
		}
		var send chan QueueEntry
		var next pendingConfig
		for len(w.order) > 0 {
			p, ok := w.pending[w.order[0]]
			if ok {
				send, next = w.out, p
				break
			}
			w.order = w.order[1:] // delivered, forgotten or read since
		}
		if len(w.order) == 0 && len(w.pending) == 0 {
			w.order, w.pending = nil, map[string]pendingConfig{} // shed the size of a burst
		}
		missing := len(w.missing) > 0
		w.mu.Unlock()
		retry = nil
		switch {
		case failed:
			retry = time.After(w.s.cfg.SessionTimeout / 4)
		case missing:
			// From the first time one was seen missing: deliveries and
			// events do not push the poll back.
			if pollAt.IsZero() {
				pollAt = time.Now().Add(missingPoll)
			}
			retry = time.After(time.Until(pollAt))
		default:
			pollAt = time.Time{}
		}
		select {
		case <-ctx.Done():
			return
		case <-w.s.done:
			return
		case <-retry:
			pollAt = time.Time{}
			w.mu.Lock()
			for q := range w.missing {
				w.dirty[q] = struct{}{}
			}
			w.mu.Unlock()
		case send <- next.e:
			// Delivered, unless a newer read replaced it meanwhile.
			w.mu.Lock()
			if cur, ok := w.pending[next.e.Name]; ok && cur.mzxid == next.mzxid {
				delete(w.pending, next.e.Name)
			}
			w.mu.Unlock()
		case <-w.ws.notify:
		}
	}
}

// readQueueConfig reads /queues/<bucket>/<q> without a watch, returning its
// entry and the node's Mzxid (0 when missing). The read is coalesced with
// the session's other reads (read_batch.go): a member claiming thousands
// of queues reads their configs a batch a request, and decodes each shape
// of config once (config_shapes.go).
func (s *Session) readQueueConfig(ctx context.Context, q string) (QueueEntry, int64, error) {
	p := s.queueNodePath(q)
	nd, err := s.reads.getOne(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return QueueEntry{Name: q, Err: errQueueNotFound(q)}, 0, nil
	}
	if err != nil {
		return QueueEntry{}, 0, err
	}
	return s.shapes.decode(&s.routes, p, q, nd), nd.stat.Mzxid, nil
}

func errQueueNotFound(q string) error {
	return fmt.Errorf("queue %s: %w", q, drover.ErrQueueNotFound)
}
