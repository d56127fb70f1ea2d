package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// Queue families live in /families/<name>, one node each holding the
// family's JSON (drover.FamilyConfig). They are few (drover.MaxFamilies):
// the rebalance leader watches them all, so that it can register a queue
// of a family at its first enqueue (registrar.Registrar).

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

func decodeFamily(p, name string, nd nodeData) FamilyEntry {
	e := FamilyEntry{Version: nd.stat.Version}
	if err := json.Unmarshal(nd.data, &e.Config); err != nil {
		e.Config = drover.FamilyConfig{Name: name}
		e.Err = fmt.Errorf("decode family %s: %w", p, err)
		return e
	}
	e.Err = ownName(&e.Config.Name, name, "family "+p, "family")
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
// (-1: any) and returns the new version. The queues the family registered
// get the new configuration, except those an operator changed (see
// Families.Change, which also says how many). It fails with
// drover.ErrFamilyNotFound when the family does not exist and ErrConflict
// when the version differs.
func (fs Families) Update(ctx context.Context, f drover.FamilyConfig, version int32) (int32, error) {
	c, err := fs.Change(ctx, f, version)
	return c.Version, err
}

// FamilyChange is what Families.Change did.
type FamilyChange struct {
	Version int32 // the family's new znode version
	// Updated counts the registered queues that got the new configuration;
	// Kept those that name the family but hold a configuration of their
	// own (an operator changed them), left as they are.
	Updated, Kept int
}

// Families.Change replaces an existing family when its version is version
// (-1: any), then gives its registered queues the new configuration
// (docs/decisions.md, "A family's change reaches its queues"). A queue is
// the family's while its stored config equals the family's previous
// configuration rendered for its name (FamilyConfig.QueueFor); one that
// differs was changed by an operator and is kept. The queues are found in
// the registry buckets by the previous prefix and written bucket by
// bucket: one multi per bucket (cut under batchBytes) that sets the
// configs at the versions read and the bucket at its version, so a
// concurrent update of a queue (or any write to its bucket) makes the
// multi fail and the bucket is read and judged again: an operator's
// update is never overwritten. Nothing is written when the queue
// configuration did not change (a new prefix or retire_after only). When
// the queues' update fails part way the error says so; the family is
// changed and the queues updated so far keep the new configuration.
func (fs Families) Change(ctx context.Context, f drover.FamilyConfig, version int32) (FamilyChange, error) {
	s := fs.s
	p, err := s.familyPath(f.Name)
	if err != nil {
		return FamilyChange{}, fmt.Errorf("update family: %w", err)
	}
	data, err := encodeFamily(f)
	if err != nil {
		return FamilyChange{}, fmt.Errorf("update family: %w", err)
	}
	fams, err := s.Families().List(ctx)
	if err != nil {
		return FamilyChange{}, fmt.Errorf("update family %s: %w", f.Name, err)
	}
	for _, o := range fams {
		if o.Config.Prefix == f.Prefix && o.Config.Name != f.Name {
			return FamilyChange{}, fmt.Errorf("update family %s: %w: family %s has the prefix %q already", f.Name, drover.ErrInvalidConfig, o.Config.Name, f.Prefix)
		}
	}
	// The configuration replaced is the one the queues are judged by: read
	// it, and replace exactly that version.
	var prev FamilyEntry
	for {
		prev, err = s.Families().Get(ctx, f.Name)
		if err != nil && prev.Err == nil {
			return FamilyChange{}, fmt.Errorf("update family: %w", err)
		}
		if version >= 0 && prev.Version != version {
			return FamilyChange{}, fmt.Errorf("update family %s at version %d: %w", f.Name, version, ErrConflict)
		}
		st, err := bounded(ctx, s, func(c zkConn) (*zk.Stat, error) { return c.Set(p, data, prev.Version) })
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return FamilyChange{}, fmt.Errorf("update family %s: %w", f.Name, drover.ErrFamilyNotFound)
		case errors.Is(err, zk.ErrBadVersion) && version < 0:
			continue // changed since the read: judge by the newer one
		case errors.Is(err, zk.ErrBadVersion):
			return FamilyChange{}, fmt.Errorf("update family %s at version %d: %w", f.Name, version, ErrConflict)
		case err != nil:
			return FamilyChange{}, fmt.Errorf("update family %s: %w", f.Name, err)
		}
		c := FamilyChange{Version: st.Version}
		if prev.Err != nil {
			// A corrupt family gave no configuration to judge by: its
			// queues are kept.
			s.log.Warn("a corrupt queue family was replaced; its queues keep their configuration", "family", f.Name, "error", prev.Err)
			return c, nil
		}
		c.Updated, c.Kept, err = s.applyFamily(ctx, f, func(q string) (drover.QueueConfig, bool) {
			return prev.Config.QueueFor(q), strings.HasPrefix(q, prev.Config.Prefix)
		})
		if err != nil {
			return c, fmt.Errorf("update family %s: the family is changed (version %d), but its queues only in part (%d updated): %w", f.Name, c.Version, c.Updated, err)
		}
		return c, nil
	}
}

// Families.Reapply gives queues registered with cfgs (a configuration the
// family f rendered before its latest change) f's configuration, as
// Families.Change does for the queues it finds: only where the stored config
// still equals the one registered. The family registrar calls it for the
// queues it registered from a family it had not yet seen change, which
// Families.Change may have walked past. It returns how many it updated and
// kept.
func (fs Families) Reapply(ctx context.Context, f drover.FamilyConfig, cfgs []drover.QueueConfig) (updated, kept int, err error) {
	s := fs.s
	was := make(map[string]drover.QueueConfig, len(cfgs))
	for _, c := range cfgs {
		if c.Family == f.Name {
			was[c.Name] = c
		}
	}
	updated, kept, err = s.applyFamily(ctx, f, func(q string) (drover.QueueConfig, bool) {
		c, ok := was[q]
		return c, ok
	})
	if err != nil {
		return updated, kept, fmt.Errorf("reapply family %s: %w", f.Name, err)
	}
	return updated, kept, nil
}

// familyMaxRetries bounds how often applyFamily reads and judges one
// bucket again after a concurrent write to it.
const familyMaxRetries = 20

// applyFamily writes f's configuration to the queues of every registry
// bucket that was(q) selects (ok) and whose stored config equals was(q)
// (compared as JSON): one multi per bucket, cut under batchBytes, the
// configs at the versions read and the bucket at its own. A queue that
// names the family but holds another config is counted as kept; one
// already holding f's is left; one of another family, or none, is not the
// family's and not counted. Buckets are written createParallelism at once.
func (s *Session) applyFamily(ctx context.Context, f drover.FamilyConfig, was func(q string) (drover.QueueConfig, bool)) (updated, kept int, err error) {
	names, err := children(ctx, s, s.path(queuesDir))
	if err != nil {
		return 0, 0, fmt.Errorf("list registry buckets: %w", err)
	}
	type outcome struct {
		updated, kept int
		err           error
	}
	outs := parallelMapN(ctx, createParallelism, names, func(bn string) outcome {
		bp := s.path(queuesDir, bn)
		o := outcome{}
		for range familyMaxRetries {
			cur, err := s.readBucket(ctx, bp)
			if err != nil || cur.missing {
				o.err = err
				return o
			}
			var qs []string
			for _, q := range cur.data.Queues {
				if _, ok := was(q); ok {
					qs = append(qs, q)
				}
			}
			if len(qs) == 0 {
				return o
			}
			type read struct {
				nd  nodeData
				err error
			}
			reads := parallelMap(ctx, qs, func(q string) read {
				nd, err := getNode(ctx, s, bp+"/"+q)
				return read{nd, err}
			})
			var ops []any
			var cfgs []drover.QueueConfig
			o.kept = 0
			for i, q := range qs {
				rd := reads[i]
				if errors.Is(rd.err, zk.ErrNoNode) {
					continue // deleted meanwhile (its bucket entry goes with it)
				}
				if rd.err != nil {
					o.err = rd.err
					return o
				}
				e := decodeQueue(bp+"/"+q, q, rd.nd)
				if e.Err != nil || e.Config.Family != f.Name {
					continue // not the family's
				}
				old, _ := was(q)
				to := f.QueueFor(q)
				stored, _ := json.Marshal(e.Config)
				want, _ := json.Marshal(old)
				data, err := json.Marshal(to)
				if err != nil {
					o.err = fmt.Errorf("encode queue %s: %w", q, err)
					return o
				}
				switch {
				case bytes.Equal(stored, data):
					continue // has it already
				case !bytes.Equal(stored, want):
					o.kept++ // an operator's own configuration
					continue
				}
				if err := to.Validate(); err != nil {
					o.err = err
					return o
				}
				cfgs = append(cfgs, to)
				ops = append(ops, &zk.SetDataRequest{Path: bp + "/" + q, Data: data, Version: e.Version})
			}
			if len(ops) == 0 {
				return o
			}
			n, err := s.writeBucketOps(ctx, bp, cur.version, cur.data, ops, cfgs)
			o.updated += n
			switch {
			case err == nil:
				return o
			case isVersionConflict(err):
				// A queue or the bucket changed since the read: judge again.
			default:
				o.err = err
				return o
			}
			if err := ctx.Err(); err != nil {
				o.err = err
				return o
			}
		}
		o.err = fmt.Errorf("registry bucket %s: still changing after %d tries", bp, familyMaxRetries)
		return o
	})
	var errs []error
	for _, o := range outs {
		updated += o.updated
		kept += o.kept
		errs = append(errs, o.err)
	}
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return updated, kept, err
	}
	return updated, kept, nil
}

// writeBucketOps writes cfgs (configs of queues of bucket bp, ops[i]
// setting cfgs[i] at the version read) in multis cut under batchBytes, each
// also setting the bucket (base, the bucket as read at version, with the
// weights and tags of the configs written so far) at the version the one
// before left. It returns how many configs were written, and the error of
// a multi that failed (zk.ErrBadVersion or zk.ErrNoNode when a config or
// the bucket changed since the read).
func (s *Session) writeBucketOps(ctx context.Context, bp string, version int32, base bucketData, ops []any, cfgs []drover.QueueConfig) (int, error) {
	// The bucket's size with every config put: what each multi carries,
	// about (weights and tags are a small part of it).
	full := base.clone()
	for _, c := range cfgs {
		full.put(c)
		full.touch(c.Name)
	}
	fullData, err := json.Marshal(full)
	if err != nil {
		return 0, fmt.Errorf("encode registry bucket %s: %w", bp, err)
	}
	done := 0
	for done < len(ops) {
		j, size := done, requestSize(bp, fullData)
		for j < len(ops) && (j == done || size+opSize(ops[j]) <= batchBytes) {
			size += opSize(ops[j])
			j++
		}
		next := base.clone()
		for _, c := range cfgs[:j] {
			next.put(c)
			next.touch(c.Name) // its owner reads it again (ConfigWatch)
		}
		data, err := json.Marshal(next)
		if err != nil {
			return done, fmt.Errorf("encode registry bucket %s: %w", bp, err)
		}
		if len(data) > maxBucketBytes {
			return done, fmt.Errorf("%w: registry bucket %s would hold %d bytes (%d queues), more than %d", ErrTooLarge, bp, len(data), len(next.Queues), maxBucketBytes)
		}
		// Every multi sets the bucket (the version check fences concurrent
		// writers) and moves its notice, which tells the queues' owners
		// (ConfigWatch).
		chunk := append(slices.Clip(ops[done:j]), &zk.SetDataRequest{Path: bp, Data: data, Version: version}, s.noticeOp(bp))
		res, err := bounded(ctx, s, func(c zkConn) ([]zk.MultiResponse, error) { return c.Multi(chunk...) })
		if err != nil {
			if i := failedOp(res); i >= 0 {
				if i == len(chunk)-1 {
					// The bucket's first notice: created, the caller's
					// next round writes (zk.ErrNoNode is a conflict).
					if err := s.createNotice(ctx, bp); err != nil {
						return done, err
					}
				}
				return done, res[i].Error
			}
			return done, err
		}
		done = j
		version = res[len(res)-2].Stat.Version
	}
	return done, nil
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
	err = deleteNode(ctx, s, p, -1)
	if errors.Is(err, zk.ErrNoNode) {
		err = drover.ErrFamilyNotFound
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
	nd, err := getNamed(ctx, s, p, "family "+name, drover.ErrFamilyNotFound)
	if err != nil {
		return FamilyEntry{}, err
	}
	e := decodeFamily(p, name, nd)
	return e, e.Err
}

// List lists every family, sorted by name; corrupt ones with Err set.
func (fs Families) List(ctx context.Context) ([]FamilyEntry, error) {
	s := fs.s
	d := newDirCache(s.path(familiesDir))
	if err := d.read(ctx, s); err != nil {
		return nil, fmt.Errorf("list families: %w", err)
	}
	return decodeDir(d, decodeFamily), nil
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
		for _, e := range decodeDir(d, decodeFamily) {
			if e.Err != nil {
				s.log.Warn("ignoring a corrupt queue family", "error", e.Err)
				continue
			}
			fs = append(fs, e.Config)
		}
		return fs, nil
	})
}
