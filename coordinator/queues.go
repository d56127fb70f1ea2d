package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// Registry errors.
var (
	// ErrQueueExists: CreateQueue found the queue already configured.
	ErrQueueExists = errors.New("coordinator: queue already exists")
	// ErrConflict: a conditional update found another version than expected.
	ErrConflict = errors.New("coordinator: version conflict")
)

// QueueEntry is one queue configuration as read from /queues.
type QueueEntry struct {
	Name    string
	Config  drover.QueueConfig // as stored (defaults not applied)
	Version int32              // znode version, for UpdateQueue
	Err     error              // set when the data could not be decoded or names another queue
}

// CreateQueue stores cfg (validated) as /queues/<bucket>/<cfg.Name>. It fails
// with an error wrapping ErrQueueExists when the queue is already configured,
// and with one wrapping ErrTooLarge when the queue's registry bucket is full
// (the registry then holds millions of queues).
func (s *Session) CreateQueue(ctx context.Context, cfg drover.QueueConfig) error {
	p, data, err := s.encodeQueue(cfg)
	if err != nil {
		return fmt.Errorf("create queue: %w", err)
	}
	bucket := path.Dir(p)
	_, err = bounded(ctx, s, func(c zkConn) (struct{}, error) {
		exists, st, err := c.Exists(bucket)
		switch {
		case err != nil:
			return struct{}{}, err
		case !exists:
			if _, err := c.Create(bucket, nil, zk.FlagPersistent, s.acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return struct{}{}, err
			}
		case st.NumChildren >= maxBucketQueues:
			return struct{}{}, fmt.Errorf("%w: registry bucket %s holds %d queues, the most one listing carries", ErrTooLarge, bucket, st.NumChildren)
		}
		_, err = c.Create(p, data, zk.FlagPersistent, s.acl)
		return struct{}{}, err
	})
	if errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create queue %s: %w", cfg.Name, ErrQueueExists)
	}
	if err != nil {
		return fmt.Errorf("create queue %s: %w", cfg.Name, err)
	}
	return nil
}

// CreateQueues stores many queue configurations in multis of at most
// maxRequestBytes each, several in flight; queues already configured are
// left as they are. It returns how many it created. It is for provisioning
// thousands of queues at once (CreateQueue costs two round trips each).
func (s *Session) CreateQueues(ctx context.Context, cfgs []drover.QueueConfig) (int, error) {
	type item struct {
		p    string
		data []byte
		cfg  drover.QueueConfig
	}
	items := make([]item, 0, len(cfgs))
	perBucket := map[string]int{}
	for _, cfg := range cfgs {
		p, data, err := s.encodeQueue(cfg)
		if err != nil {
			return 0, fmt.Errorf("create queues: %w", err)
		}
		items = append(items, item{p, data, cfg})
		perBucket[path.Dir(p)]++
	}
	buckets := make([]string, 0, len(perBucket))
	for b := range perBucket {
		buckets = append(buckets, b)
	}
	errs := parallelMap(ctx, buckets, func(b string) error {
		_, err := bounded(ctx, s, func(c zkConn) (struct{}, error) {
			exists, st, err := c.Exists(b)
			switch {
			case err != nil:
				return struct{}{}, err
			case !exists:
				_, err = c.Create(b, nil, zk.FlagPersistent, s.acl)
				if errors.Is(err, zk.ErrNodeExists) {
					err = nil
				}
				return struct{}{}, err
			case int(st.NumChildren)+perBucket[b] > maxBucketQueues:
				return struct{}{}, fmt.Errorf("%w: registry bucket %s holds %d queues and would hold %d, more than one listing carries",
					ErrTooLarge, b, st.NumChildren, int(st.NumChildren)+perBucket[b])
			}
			return struct{}{}, nil
		})
		return err
	})
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return 0, fmt.Errorf("create queues: %w", err)
	}
	var batches [][]item
	size := 0
	for _, it := range items {
		n := requestSize(it.p, it.data)
		if len(batches) == 0 || size+n > batchBytes || len(batches[len(batches)-1]) >= 500 {
			batches = append(batches, nil)
			size = 0
		}
		batches[len(batches)-1] = append(batches[len(batches)-1], it)
		size += n
	}
	type outcome struct {
		created int
		err     error
	}
	outs := parallelMapN(ctx, writeParallelism, batches, func(batch []item) outcome {
		ops := make([]any, len(batch))
		for i, it := range batch {
			ops[i] = &zk.CreateRequest{Path: it.p, Data: it.data, Acl: s.acl, Flags: zk.FlagPersistent}
		}
		_, err := bounded(ctx, s, func(c zkConn) ([]zk.MultiResponse, error) { return c.Multi(ops...) })
		if err == nil {
			return outcome{created: len(batch)}
		}
		if !errors.Is(err, zk.ErrNodeExists) && !isUnknownOutcome(err) {
			return outcome{err: err}
		}
		// Some exist (or the outcome is unknown): one by one.
		o := outcome{}
		for _, it := range batch {
			err := s.CreateQueue(ctx, it.cfg)
			switch {
			case err == nil:
				o.created++
			case !errors.Is(err, ErrQueueExists):
				o.err = err
				return o
			}
		}
		return o
	})
	created := 0
	var errs2 []error
	for _, o := range outs {
		created += o.created
		errs2 = append(errs2, o.err)
	}
	if err := errors.Join(append(errs2, ctx.Err())...); err != nil {
		return created, fmt.Errorf("create queues: %w", err)
	}
	return created, nil
}

// requestSize estimates the bytes one op of a multi takes on the wire: the
// path, the data and a fixed overhead (header, ACL, flags, version).
func requestSize(p string, data []byte) int { return len(p) + len(data) + 64 }

// UpdateQueue replaces the configuration of an existing queue when its
// version is version (-1: any) and returns the new version. It fails with
// drover.ErrQueueNotFound when the queue is not configured and ErrConflict
// when the version differs.
func (s *Session) UpdateQueue(ctx context.Context, cfg drover.QueueConfig, version int32) (int32, error) {
	p, data, err := s.encodeQueue(cfg)
	if err != nil {
		return 0, fmt.Errorf("update queue: %w", err)
	}
	st, err := bounded(ctx, s, func(c zkConn) (*zk.Stat, error) { return c.Set(p, data, version) })
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return 0, fmt.Errorf("update queue %s: %w", cfg.Name, drover.ErrQueueNotFound)
	case errors.Is(err, zk.ErrBadVersion):
		return 0, fmt.Errorf("update queue %s at version %d: %w", cfg.Name, version, ErrConflict)
	case err != nil:
		return 0, fmt.Errorf("update queue %s: %w", cfg.Name, err)
	}
	return st.Version, nil
}

// DeleteQueue removes a queue's configuration. Its offset node and its
// messages in Redis are kept. It fails with drover.ErrQueueNotFound when the
// queue is not configured.
func (s *Session) DeleteQueue(ctx context.Context, name string) error {
	p, err := s.queueConfigPath(name)
	if err != nil {
		return fmt.Errorf("delete queue: %w", err)
	}
	_, err = bounded(ctx, s, func(c zkConn) (struct{}, error) { return struct{}{}, c.Delete(p, -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("delete queue %s: %w", name, drover.ErrQueueNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete queue %s: %w", name, err)
	}
	return nil
}

// Queue reads one queue's configuration. It fails with
// drover.ErrQueueNotFound when the queue is not configured, and with an error
// naming the node when the stored data is corrupt (the entry is returned too,
// with Err set).
func (s *Session) Queue(ctx context.Context, name string) (QueueEntry, error) {
	p, err := s.queueConfigPath(name)
	if err != nil {
		return QueueEntry{}, fmt.Errorf("read queue: %w", err)
	}
	nd, err := bounded(ctx, s, func(c zkConn) (nodeData, error) {
		data, st, err := c.Get(p)
		if err != nil {
			return nodeData{}, err
		}
		return nodeData{data, *st}, nil
	})
	if errors.Is(err, zk.ErrNoNode) {
		return QueueEntry{}, fmt.Errorf("read queue %s: %w", name, drover.ErrQueueNotFound)
	}
	if err != nil {
		return QueueEntry{}, fmt.Errorf("read queue %s: %w", name, err)
	}
	e := decodeQueue(p, name, nd)
	return e, e.Err
}

// Queues lists every configured queue, sorted by name. Corrupt entries are
// listed with Err set.
func (s *Session) Queues(ctx context.Context) ([]QueueEntry, error) {
	r := newRegistryCache(s.path(queuesDir))
	if err := r.read(ctx, s); err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	return r.entries(nil), nil
}

// WatchQueues delivers the queue list now and after every change (a queue
// added, removed or reconfigured) until ctx ends or the session is lost, then
// closes the channel. Only the latest list is kept for a slow reader. It
// costs a watch per queue and per bucket: only the rebalance leader needs it.
// Entries with equal task routes share one Config.Tasks map: read it, never
// modify it.
func (s *Session) WatchQueues(ctx context.Context) <-chan []QueueEntry {
	r := newRegistryCache(s.path(queuesDir))
	return watchLoop(ctx, s, "queues", func(ctx context.Context, ws *watchSet) ([]QueueEntry, error) {
		if err := r.refresh(ctx, s, ws); err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		return r.entries(&s.routes), nil
	})
}

// registryCache mirrors the registry, /queues/<bucket>/<queue>.
type registryCache struct {
	dir     string
	buckets map[string]*dirCache
}

func newRegistryCache(dir string) *registryCache {
	return &registryCache{dir: dir, buckets: map[string]*dirCache{}}
}

// refresh re-reads what changed: the bucket list when it changed, then
// every bucket listing and queue node whose watch fired.
func (r *registryCache) refresh(ctx context.Context, s *Session, ws *watchSet) error {
	ck := watchKey{watchChildren, r.dir}
	if !ws.isArmed(ck) {
		ws.prepare(ck)
		names, err := bounded(ctx, s, func(c zkConn) ([]string, error) {
			names, _, _, err := c.ChildrenW(r.dir)
			return names, err
		})
		if err != nil {
			ws.cancel(ck)
			return err
		}
		ws.armed(ck)
		r.setBuckets(names, ws)
	}
	return refreshDirs(ctx, s, ws, r.dirs())
}

// setBuckets follows the bucket listing.
func (r *registryCache) setBuckets(names []string, ws *watchSet) {
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
		if r.buckets[n] == nil {
			r.buckets[n] = newDirCache(r.dir + "/" + n)
		}
	}
	for n, d := range r.buckets {
		if present[n] {
			continue
		}
		if ws != nil {
			ws.forget(watchKey{watchChildren, d.dir})
			for q := range d.nodes {
				ws.forget(watchKey{watchNode, d.dir + "/" + q})
			}
		}
		delete(r.buckets, n)
	}
}

func (r *registryCache) dirs() []*dirCache {
	out := make([]*dirCache, 0, len(r.buckets))
	for _, d := range r.buckets {
		out = append(out, d)
	}
	return out
}

// read fills the cache once, without watches.
func (r *registryCache) read(ctx context.Context, s *Session) error {
	names, err := bounded(ctx, s, func(c zkConn) ([]string, error) {
		names, _, err := c.Children(r.dir)
		return names, err
	})
	if err != nil {
		return err
	}
	r.setBuckets(names, nil)
	errs := parallelMap(ctx, r.dirs(), func(d *dirCache) error { return d.read(ctx, s) })
	return errors.Join(append(errs, ctx.Err())...)
}

// entries returns every queue, sorted by name, with their task routes
// shared through routes unless it is nil.
func (r *registryCache) entries(routes *routeInterner) []QueueEntry {
	var out []QueueEntry
	for _, d := range r.buckets {
		for name, nd := range d.nodes {
			e := decodeQueue(d.dir+"/"+name, name, nd)
			if routes != nil {
				e = routes.shared(e)
			}
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *Session) encodeQueue(cfg drover.QueueConfig) (string, []byte, error) {
	if err := cfg.Validate(); err != nil {
		return "", nil, err
	}
	p, err := s.queueConfigPath(cfg.Name)
	if err != nil {
		return "", nil, err
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("encode queue %s: %w", cfg.Name, err)
	}
	return p, data, nil
}

func decodeQueue(p, name string, nd nodeData) QueueEntry {
	e := QueueEntry{Name: name, Version: nd.stat.Version}
	if err := json.Unmarshal(nd.data, &e.Config); err != nil {
		e.Config = drover.QueueConfig{Name: name}
		e.Err = fmt.Errorf("decode queue config %s: %w", p, err)
		return e
	}
	if e.Config.Name == "" {
		e.Config.Name = name
	}
	if e.Config.Name != name {
		e.Err = fmt.Errorf("queue config %s names queue %q", p, e.Config.Name)
	}
	return e
}
