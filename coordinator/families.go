package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// Queue families live in /families/<name>, one node each holding the
// family's JSON (drover.FamilyConfig). They are few (drover.MaxFamilies):
// the rebalance leader watches them all, so that it can register a queue
// of a family at its first enqueue (fleet.Registrar).

// createParallelism is how many registry buckets Queues.CreateMany writes at
// once (a read and a multi each, pipelined on the session's connection).
// The family registrar registers a second's new queues in one call, which
// touches most of the 1,024 buckets: at 8 in flight a call of 2,000 queues
// took 3.7 s on a loaded machine, most of it round trips.
const createParallelism = 64

// ErrFamilyExists: Families.Create found the family already stored.
var ErrFamilyExists = errors.New("coordinator: queue family already exists")

// FamilyEntry is one family as read from /families.
type FamilyEntry struct {
	Config  drover.FamilyConfig
	Version int32 // znode version, for Families.Update
	Err     error // set when the data could not be decoded
}

func (s *Session) familyPath(name string) (string, error) {
	if err := drover.ValidateQueueName(name); err != nil {
		return "", fmt.Errorf("family name: %w", err)
	}
	return s.path(familiesDir, name), nil
}

func encodeFamily(f drover.FamilyConfig) ([]byte, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	f.Queue.Name, f.Queue.Family = "", "" // set per queue
	data, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encode family %s: %w", f.Name, err)
	}
	if len(data) > maxBucketBytes {
		return nil, fmt.Errorf("%w: family %s would hold %d bytes", ErrTooLarge, f.Name, len(data))
	}
	return data, nil
}

func decodeFamily(p, name string, data []byte, version int32) FamilyEntry {
	e := FamilyEntry{Version: version}
	if err := json.Unmarshal(data, &e.Config); err != nil {
		e.Config = drover.FamilyConfig{Name: name}
		e.Err = fmt.Errorf("decode family %s: %w", p, err)
		return e
	}
	if e.Config.Name == "" {
		e.Config.Name = name
	}
	if e.Config.Name != name {
		e.Err = fmt.Errorf("family %s names family %q", p, e.Config.Name)
	}
	return e
}

// Create stores f (validated). It fails with an error wrapping
// ErrFamilyExists when a family of that name exists, and with one wrapping
// drover.ErrInvalidConfig when another family has the same prefix (which
// would leave the choice between them to their names) or when
// drover.MaxFamilies exist already.
func (fs Families) Create(ctx context.Context, f drover.FamilyConfig) error {
	s := fs.s
	p, err := s.familyPath(f.Name)
	if err != nil {
		return fmt.Errorf("create family: %w", err)
	}
	data, err := encodeFamily(f)
	if err != nil {
		return fmt.Errorf("create family: %w", err)
	}
	fams, err := s.Families().List(ctx)
	if err != nil {
		return fmt.Errorf("create family %s: %w", f.Name, err)
	}
	if len(fams) >= drover.MaxFamilies {
		return fmt.Errorf("create family %s: %w: %d families exist, the most a cluster holds", f.Name, drover.ErrInvalidConfig, len(fams))
	}
	for _, o := range fams {
		if o.Config.Prefix == f.Prefix && o.Config.Name != f.Name {
			return fmt.Errorf("create family %s: %w: family %s has the prefix %q already", f.Name, drover.ErrInvalidConfig, o.Config.Name, f.Prefix)
		}
	}
	_, err = bounded(ctx, s, func(c zkConn) (string, error) { return c.Create(p, data, zk.FlagPersistent, s.acl) })
	if errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create family %s: %w", f.Name, ErrFamilyExists)
	}
	if err != nil {
		return fmt.Errorf("create family %s: %w", f.Name, err)
	}
	return nil
}

// Update replaces an existing family when its version is version
// (-1: any) and returns the new version. The change applies to queues the
// family registers from now on; queues it registered keep the
// configuration they were registered with (docs/decisions.md, "Queue
// families"). It fails with drover.ErrFamilyNotFound when the family does
// not exist and ErrConflict when the version differs.
func (fs Families) Update(ctx context.Context, f drover.FamilyConfig, version int32) (int32, error) {
	s := fs.s
	p, err := s.familyPath(f.Name)
	if err != nil {
		return 0, fmt.Errorf("update family: %w", err)
	}
	data, err := encodeFamily(f)
	if err != nil {
		return 0, fmt.Errorf("update family: %w", err)
	}
	fams, err := s.Families().List(ctx)
	if err != nil {
		return 0, fmt.Errorf("update family %s: %w", f.Name, err)
	}
	for _, o := range fams {
		if o.Config.Prefix == f.Prefix && o.Config.Name != f.Name {
			return 0, fmt.Errorf("update family %s: %w: family %s has the prefix %q already", f.Name, drover.ErrInvalidConfig, o.Config.Name, f.Prefix)
		}
	}
	st, err := bounded(ctx, s, func(c zkConn) (*zk.Stat, error) { return c.Set(p, data, version) })
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return 0, fmt.Errorf("update family %s: %w", f.Name, drover.ErrFamilyNotFound)
	case errors.Is(err, zk.ErrBadVersion):
		return 0, fmt.Errorf("update family %s at version %d: %w", f.Name, version, ErrConflict)
	case err != nil:
		return 0, fmt.Errorf("update family %s: %w", f.Name, err)
	}
	return st.Version, nil
}

// Delete removes a family. The queues it registered stay configured
// as they are (they are ordinary queues from then on, still naming the
// family they came from). It fails with drover.ErrFamilyNotFound when the
// family does not exist.
func (fs Families) Delete(ctx context.Context, name string) error {
	s := fs.s
	p, err := s.familyPath(name)
	if err != nil {
		return fmt.Errorf("delete family: %w", err)
	}
	_, err = bounded(ctx, s, func(c zkConn) (struct{}, error) { return struct{}{}, c.Delete(p, -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("delete family %s: %w", name, drover.ErrFamilyNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete family %s: %w", name, err)
	}
	return nil
}

// Get reads one family. It fails with drover.ErrFamilyNotFound when it
// does not exist, and with an error naming the node when its data is
// corrupt (the entry is returned too, with Err set).
func (fs Families) Get(ctx context.Context, name string) (FamilyEntry, error) {
	s := fs.s
	p, err := s.familyPath(name)
	if err != nil {
		return FamilyEntry{}, fmt.Errorf("read family: %w", err)
	}
	nd, err := getNode(ctx, s, p)
	if errors.Is(err, zk.ErrNoNode) {
		return FamilyEntry{}, fmt.Errorf("read family %s: %w", name, drover.ErrFamilyNotFound)
	}
	if err != nil {
		return FamilyEntry{}, fmt.Errorf("read family %s: %w", name, err)
	}
	e := decodeFamily(p, name, nd.data, nd.stat.Version)
	return e, e.Err
}

// List lists every family, sorted by name; corrupt ones with Err set.
func (fs Families) List(ctx context.Context) ([]FamilyEntry, error) {
	s := fs.s
	d := newDirCache(s.path(familiesDir))
	if err := d.read(ctx, s); err != nil {
		return nil, fmt.Errorf("list families: %w", err)
	}
	return familyEntries(d), nil
}

func familyEntries(d *dirCache) []FamilyEntry {
	out := make([]FamilyEntry, 0, len(d.nodes))
	for _, n := range d.names() {
		nd := d.nodes[n]
		out = append(out, decodeFamily(d.dir+"/"+n, n, nd.data, nd.stat.Version))
	}
	return out
}

// Watch delivers every valid family now and after each change,
// until ctx ends or the session is lost; then it closes the channel.
// Corrupt families are logged and left out. Only the latest set is kept
// for a slow reader.
func (fs Families) Watch(ctx context.Context) <-chan drover.Families {
	s := fs.s
	d := newDirCache(s.path(familiesDir))
	return watchLoop(ctx, s, "families", func(ctx context.Context, ws *watchSet) (drover.Families, error) {
		if err := d.refresh(ctx, s, ws); err != nil {
			return nil, fmt.Errorf("watch families: %w", err)
		}
		var fs drover.Families
		for _, e := range familyEntries(d) {
			if e.Err != nil {
				s.log.Warn("ignoring a corrupt queue family", "error", e.Err)
				continue
			}
			fs = append(fs, e.Config)
		}
		return fs, nil
	})
}

// Retire removes queue from the registry when it is a queue of family
// (its config names the family) and empty says so, and reports whether it
// did. empty runs between the read of the config and its delete (it
// retires the queue's Redis keys when the queue is still empty: see
// fleet.Registrar); the config and its bucket entry then go in one multi
// checked against the config's version as read, so a queue an operator
// reconfigured meanwhile is kept. The queue's offset node stays until
// DropOffset, once no member owns the queue.
func (q Queues) Retire(ctx context.Context, queue, family string, empty func(context.Context) (bool, error)) (bool, error) {
	s := q.s
	e, err := s.Queues().Get(ctx, queue)
	if errors.Is(err, drover.ErrQueueNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("retire queue %s: %w", queue, err)
	}
	if e.Config.Family != family || family == "" {
		return false, nil // configured on its own, or by another family
	}
	if ok, err := empty(ctx); err != nil || !ok {
		return false, err
	}
	p := s.queueNodePath(queue)
	_, err = s.updateBucket(ctx, path.Dir(p), func(b *bucketData) ([]any, error) {
		b.remove(queue)
		return []any{&zk.DeleteRequest{Path: p, Version: e.Version}}, nil
	})
	if isVersionConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("retire queue %s: %w", queue, err)
	}
	return true, nil
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

// DropOffset deletes queue's offset node when the queue is neither
// configured nor owned, and reports whether the node is gone (deleted, or
// never there) or the queue is configured again: false means a member still
// owns it, so try later. A claim that comes between the reads and the
// delete bumps the node's version and the delete fails harmlessly.
func (c Claims) DropOffset(ctx context.Context, queue string) (bool, error) {
	s := c.s
	offPath, err := s.queuePath(offsetsDir, queue)
	if err != nil {
		return false, fmt.Errorf("drop offset: %w", err)
	}
	off, err := getNode(ctx, s, offPath)
	if errors.Is(err, zk.ErrNoNode) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("drop offset of %s: %w", queue, err)
	}
	owned, err := bounded(ctx, s, func(c zkConn) (bool, error) {
		ok, _, err := c.Exists(s.path(ownersDir, queue))
		return ok, err
	})
	if err != nil {
		return false, fmt.Errorf("drop offset of %s: %w", queue, err)
	}
	if owned {
		return false, nil
	}
	configured, err := bounded(ctx, s, func(c zkConn) (bool, error) {
		ok, _, err := c.Exists(s.queueNodePath(queue))
		return ok, err
	})
	if err != nil {
		return false, fmt.Errorf("drop offset of %s: %w", queue, err)
	}
	if configured {
		return true, nil // registered again: its offset is its own
	}
	_, err = bounded(ctx, s, func(c zkConn) (struct{}, error) { return struct{}{}, c.Delete(offPath, off.stat.Version) })
	if err != nil && !isVersionConflict(err) {
		return false, fmt.Errorf("drop offset of %s: %w", queue, err)
	}
	return true, nil
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
	n := p.len()
	i, ok := sort.Find(n, func(i int) int { return strings.Compare(q, p.nameAt(i)) })
	return ok && i < n
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
		return QueueEntry{Name: queue, Config: f.QueueFor(queue), Version: -1}, nil
	}
	return e, err
}
