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
	// ErrQueueExists: Queues.Create found the queue already configured.
	ErrQueueExists = errors.New("coordinator: queue already exists")
	// ErrConflict: a conditional update found another version than expected.
	ErrConflict = errors.New("coordinator: version conflict")
)

// QueueEntry is one queue configuration as read from /queues.
type QueueEntry struct {
	Name    string
	Config  drover.QueueConfig // as stored (defaults not applied)
	Version int32              // znode version, for Queues.Update
	Err     error              // set when the data could not be decoded or names another queue
	// MaxQueues is, for a key of a family not registered yet (GetOrFamily:
	// Version -1), its family's bound on the queues HTTP producers bring
	// into it (drover.FamilyConfig.QueueBound); 0 otherwise.
	MaxQueues int
}

// Create stores cfg (validated) as /queues/<bucket>/<cfg.Name> and
// lists it in its registry bucket, in one multi. It fails with an error
// wrapping ErrQueueExists when the queue is already configured, and with
// one wrapping ErrTooLarge when the queue's registry bucket is full (the
// registry then holds millions of queues).
func (q Queues) Create(ctx context.Context, cfg drover.QueueConfig) error {
	s := q.s
	p, data, err := s.encodeQueue(cfg)
	if err != nil {
		return fmt.Errorf("create queue: %w", err)
	}
	_, err = s.updateBucketNotify(ctx, path.Dir(p), func(b *bucketData) ([]any, error) {
		if b.has(cfg.Name) {
			return nil, zk.ErrNodeExists
		}
		if len(b.Queues) >= maxBucketQueues {
			return nil, fmt.Errorf("%w: registry bucket %s holds %d queues, the most one listing carries", ErrTooLarge, path.Dir(p), len(b.Queues))
		}
		b.put(cfg)
		return []any{&zk.CreateRequest{Path: p, Data: data, Acl: s.acl, Flags: zk.FlagPersistent}}, nil
	})
	if errors.Is(err, zk.ErrNodeExists) {
		if err := s.adoptQueue(ctx, cfg.Name); err != nil {
			return fmt.Errorf("create queue %s: it exists; list it in its bucket: %w", cfg.Name, err)
		}
		return fmt.Errorf("create queue %s: %w", cfg.Name, ErrQueueExists)
	}
	if err != nil {
		return fmt.Errorf("create queue %s: %w", cfg.Name, err)
	}
	return nil
}

// adoptQueue lists an existing config node in its bucket when the bucket
// does not list it, or lists it with another weight or tags (a writer
// outside Drover created or changed the config alone): the rebalance leader
// reads the buckets only. The config's version is checked in the same
// multi.
func (s *Session) adoptQueue(ctx context.Context, name string) error {
	e, err := s.Queues().Get(ctx, name)
	if errors.Is(err, drover.ErrQueueNotFound) {
		return nil // deleted meanwhile
	}
	if err != nil && e.Err == nil {
		return err
	}
	p := s.queueNodePath(name)
	_, err = s.updateBucketNotify(ctx, path.Dir(p), func(b *bucketData) ([]any, error) {
		if b.same(e.Config) {
			return nil, nil
		}
		if !b.has(name) && len(b.Queues) >= maxBucketQueues {
			return nil, fmt.Errorf("%w: registry bucket %s holds %d queues, the most one listing carries", ErrTooLarge, path.Dir(p), len(b.Queues))
		}
		listed := b.has(name)
		b.put(e.Config)
		if listed {
			b.touch(name) // changed outside Drover: its owner reads it again
		}
		return []any{&zk.CheckVersionRequest{Path: p, Version: e.Version}}, nil
	})
	if isVersionConflict(err) {
		return nil // changed or deleted meanwhile, by a writer that keeps the bucket
	}
	return err
}

// Update replaces the configuration of an existing queue when its
// version is version (-1: any) and returns the new version. The queue's
// registry bucket is written in the same multi (its weight and tags) or, when
// they did not change, checked: so a concurrent update cannot leave the
// bucket and the config disagreeing. It fails with drover.ErrQueueNotFound
// when the queue is not configured and ErrConflict when the version differs.
func (q Queues) Update(ctx context.Context, cfg drover.QueueConfig, version int32) (int32, error) {
	s := q.s
	p, data, err := s.encodeQueue(cfg)
	if err != nil {
		return 0, fmt.Errorf("update queue: %w", err)
	}
	bp := path.Dir(p)
	res, err := s.updateBucketNotify(ctx, bp, func(b *bucketData) ([]any, error) {
		ops := []any{&zk.SetDataRequest{Path: p, Data: data, Version: version}}
		if b.same(cfg) {
			// Nothing for the leader to balance differently: the revision
			// alone tells the queue's owner to read the config again.
			b.touch(cfg.Name)
			return ops, nil
		}
		if !b.has(cfg.Name) && len(b.Queues) >= maxBucketQueues {
			return nil, fmt.Errorf("%w: registry bucket %s holds %d queues, the most one listing carries", ErrTooLarge, bp, len(b.Queues))
		}
		listed := b.has(cfg.Name)
		b.put(cfg)
		if listed {
			b.touch(cfg.Name)
		}
		return ops, nil
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return 0, fmt.Errorf("update queue %s: %w", cfg.Name, drover.ErrQueueNotFound)
	case errors.Is(err, zk.ErrBadVersion):
		return 0, fmt.Errorf("update queue %s at version %d: %w", cfg.Name, version, ErrConflict)
	case err != nil:
		return 0, fmt.Errorf("update queue %s: %w", cfg.Name, err)
	}
	return res[0].Stat.Version, nil
}

// Delete removes a queue's configuration and its registry bucket
// entry, in one multi. Its offset node and its messages in Redis are kept.
// It fails with drover.ErrQueueNotFound when the queue is not configured
// (a bucket entry left without its config is removed then).
func (q Queues) Delete(ctx context.Context, name string) error {
	s := q.s
	p, err := s.queueConfigPath(name)
	if err != nil {
		return fmt.Errorf("delete queue: %w", err)
	}
	bp := path.Dir(p)
	_, err = s.updateBucketNotify(ctx, bp, func(b *bucketData) ([]any, error) {
		b.remove(name)
		return []any{&zk.DeleteRequest{Path: p, Version: -1}}, nil
	})
	if errors.Is(err, zk.ErrNoNode) {
		_, err := s.updateBucket(ctx, bp, func(b *bucketData) ([]any, error) {
			if !b.has(name) {
				return nil, nil
			}
			b.remove(name)
			return []any{}, nil
		})
		if err != nil {
			return fmt.Errorf("delete queue %s: drop its bucket entry: %w", name, err)
		}
		return fmt.Errorf("delete queue %s: %w", name, drover.ErrQueueNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete queue %s: %w", name, err)
	}
	return nil
}

// Retire removes queue from the registry when it is a queue of family
// (its config names the family) and empty says so, and reports whether it
// did. empty runs between the read of the config and its delete (it
// retires the queue's Redis keys when the queue is still empty: see
// registrar.Registrar); the config and its bucket entry then go in one multi
// checked against the config's version as read, so a queue an operator
// reconfigured meanwhile is kept. The queue's offset node stays until
// DropOffset, once no member owns the queue. It is RetireMany of one.
func (q Queues) Retire(ctx context.Context, queue, family string, empty func(context.Context) (bool, error)) (bool, error) {
	done, err := q.RetireMany(ctx, []RetireCandidate{{Queue: queue, Family: family}}, func(ctx context.Context, _ []RetireCandidate) ([]bool, error) {
		ok, err := empty(ctx)
		return []bool{ok && err == nil}, err
	})
	return done[0], err
}

// Get reads one queue's configuration. It fails with
// drover.ErrQueueNotFound when the queue is not configured, and with an error
// naming the node when the stored data is corrupt (the entry is returned too,
// with Err set).
func (q Queues) Get(ctx context.Context, name string) (QueueEntry, error) {
	s := q.s
	p, err := s.queueConfigPath(name)
	if err != nil {
		return QueueEntry{}, fmt.Errorf("read queue: %w", err)
	}
	nd, err := getNamed(ctx, s, p, "queue "+name, drover.ErrQueueNotFound)
	if err != nil {
		return QueueEntry{}, err
	}
	e := decodeQueue(p, name, nd)
	return e, e.Err
}

// GetOrFamily reads queue's configuration; for a queue not configured
// whose name matches a family, it returns the configuration the family
// will register it with (Family set, Version -1). It fails with
// drover.ErrQueueNotFound for a queue neither configured nor under a
// family. Producers' checks (the HTTP API, ctl enqueue) use it, so that a
// queue of a family accepts its first enqueue.
func (q Queues) GetOrFamily(ctx context.Context, queue string) (QueueEntry, error) {
	s := q.s
	e, err := s.Queues().Get(ctx, queue)
	if !errors.Is(err, drover.ErrQueueNotFound) {
		return e, err
	}
	fams, ferr := s.Families().List(ctx)
	if ferr != nil {
		return QueueEntry{}, fmt.Errorf("read queue %s: %w", queue, ferr)
	}
	var fs drover.Families
	for _, f := range fams {
		if f.Err == nil {
			fs = append(fs, f.Config)
		}
	}
	if f, ok := fs.Match(queue); ok {
		return QueueEntry{Name: queue, Config: f.QueueFor(queue), Version: -1, MaxQueues: f.QueueBound()}, nil
	}
	return e, err
}

// List lists every configured queue, sorted by name. Corrupt entries are
// listed with Err set.
func (q Queues) List(ctx context.Context) ([]QueueEntry, error) {
	s := q.s
	r := newRegistryCache(s.path(queuesDir))
	if err := r.read(ctx, s); err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	return r.entries(nil), nil
}

// registryCache mirrors the registry, /queues/<bucket>/<queue>.
type registryCache struct {
	dir     string
	buckets map[string]*dirCache
}

func newRegistryCache(dir string) *registryCache {
	return &registryCache{dir: dir, buckets: map[string]*dirCache{}}
}

// setBuckets follows the bucket listing.
func (r *registryCache) setBuckets(names []string) {
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
		if r.buckets[n] == nil {
			r.buckets[n] = newDirCache(r.dir + "/" + n)
		}
	}
	for n := range r.buckets {
		if !present[n] {
			delete(r.buckets, n)
		}
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
	names, err := children(ctx, s, r.dir)
	if err != nil {
		return err
	}
	r.setBuckets(names)
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
	e.Err = ownName(&e.Config.Name, name, "queue config "+p, "queue")
	return e
}

// ownName checks the name a node's data gives (*stored) against the node's
// own, name: data that names nothing takes the node's name; data that names
// another is an error (what: the node, "queue config <path>"; noun: what
// the name names, "queue").
func ownName(stored *string, name, what, noun string) error {
	if *stored == "" {
		*stored = name
	}
	if *stored != name {
		return fmt.Errorf("%s names %s %q", what, noun, *stored)
	}
	return nil
}
