package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// PauseSet is every pause flag. A flag whose data is corrupt still pauses
// (its presence is what counts); its Pause is then zero and Errs says why.
type PauseSet struct {
	All     *drover.Pause
	Queues  map[string]drover.Pause // queue name → flag
	Members map[string]drover.Pause // member name → flag
	Errs    []error
}

// Paused reports whether queue, owned by member, is paused, and by which
// flag (everything first, then the queue, then the member).
func (p PauseSet) Paused(queue, member string) (drover.Pause, bool) {
	if p.All != nil {
		return *p.All, true
	}
	if f, ok := p.Queues[queue]; ok {
		return f, true
	}
	if f, ok := p.Members[member]; ok {
		return f, true
	}
	return drover.Pause{}, false
}

// Set sets (or overwrites) the pause flag of scope: drover.PauseAll with
// an empty name, drover.PauseQueue with a queue name, drover.PauseMember with
// a member name.
func (ps Pauses) Set(ctx context.Context, scope drover.PauseScope, name string, p drover.Pause) error {
	s := ps.s
	path, err := s.pausePath(scope, name)
	if err != nil {
		return fmt.Errorf("set pause: %w", err)
	}
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("set pause %s: encode: %w", path, err)
	}
	_, err = bounded(ctx, s, func(c zkConn) (struct{}, error) {
		_, err := c.Create(path, data, zk.FlagPersistent, s.acl)
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = c.Set(path, data, -1)
		}
		return struct{}{}, err
	})
	if err != nil {
		return fmt.Errorf("set pause %s: %w", path, err)
	}
	return nil
}

// Clear removes the pause flag of scope and name; clearing a flag that
// is not set is not an error.
func (ps Pauses) Clear(ctx context.Context, scope drover.PauseScope, name string) error {
	s := ps.s
	path, err := s.pausePath(scope, name)
	if err != nil {
		return fmt.Errorf("clear pause: %w", err)
	}
	err = deleteNode(ctx, s, path, -1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("clear pause %s: %w", path, err)
	}
	return nil
}

// Read reads every pause flag.
func (ps Pauses) Read(ctx context.Context) (PauseSet, error) {
	s := ps.s
	queues, members := newDirCache(s.path(pauseQueuesDir)), newDirCache(s.path(pauseMembersDir))
	if err := queues.read(ctx, s); err != nil {
		return PauseSet{}, fmt.Errorf("read pause flags: %w", err)
	}
	if err := members.read(ctx, s); err != nil {
		return PauseSet{}, fmt.Errorf("read pause flags: %w", err)
	}
	all, err := getIfAny(ctx, s, s.path(pauseAllNode))
	if err != nil {
		return PauseSet{}, fmt.Errorf("read pause flags: %w", err)
	}
	return pausesOf(s.path(pauseAllNode), all, queues, members), nil
}

// Watch delivers every pause flag now and after every change until ctx
// ends or the session is lost, then closes the channel. Only the latest set
// is kept for a slow reader.
func (ps Pauses) Watch(ctx context.Context) <-chan PauseSet {
	s := ps.s
	queues, members := newDirCache(s.path(pauseQueuesDir)), newDirCache(s.path(pauseMembersDir))
	allPath := s.path(pauseAllNode)
	return watchLoop(ctx, s, "pauses", func(ctx context.Context, ws *watchSet) (PauseSet, error) {
		all, err := readNode(ctx, s, ws, allPath)
		if err != nil {
			return PauseSet{}, fmt.Errorf("read pause flags: %w", err)
		}
		if err := queues.refresh(ctx, s, ws); err != nil {
			return PauseSet{}, fmt.Errorf("read pause flags: %w", err)
		}
		if err := members.refresh(ctx, s, ws); err != nil {
			return PauseSet{}, fmt.Errorf("read pause flags: %w", err)
		}
		return pausesOf(allPath, all, queues, members), nil
	})
}

func pausesOf(allPath string, all *nodeData, queues, members *dirCache) PauseSet {
	ps := PauseSet{Queues: map[string]drover.Pause{}, Members: map[string]drover.Pause{}}
	decode := func(p string, data []byte) drover.Pause {
		var f drover.Pause
		if err := json.Unmarshal(data, &f); err != nil {
			ps.Errs = append(ps.Errs, fmt.Errorf("decode pause flag %s: %w", p, err))
			return drover.Pause{}
		}
		return f
	}
	if all != nil {
		f := decode(allPath, all.data)
		ps.All = &f
	}
	for n, nd := range queues.nodes {
		ps.Queues[n] = decode(queues.dir+"/"+n, nd.data)
	}
	for n, nd := range members.nodes {
		ps.Members[n] = decode(members.dir+"/"+n, nd.data)
	}
	return ps
}

// pauseBatchOps bounds the operations of one multi of SetQueues and
// ClearQueues (besides batchBytes), so that one refused multi costs
// little to redo one flag at a time.
const pauseBatchOps = 1000

// SetQueues sets the pause flag of every queue in queues to p, as
// Set(ctx, drover.PauseQueue, q, p) would for each, in few round
// trips: one listing of the queues' flags, then multis of up to
// pauseBatchOps flags (create, or overwrite a flag already set),
// writeParallelism in flight. A multi that another writer raced (a flag
// created or removed between the listing and the write: the multi is
// refused whole) is redone one flag at a time. It returns how many flags
// were written; on error some may have been.
func (ps Pauses) SetQueues(ctx context.Context, queues []string, p drover.Pause) (int, error) {
	s := ps.s
	data, err := json.Marshal(p)
	if err != nil {
		return 0, fmt.Errorf("set pauses: encode: %w", err)
	}
	set, err := s.pausedQueueNames(ctx)
	if err != nil {
		return 0, fmt.Errorf("set pauses: %w", err)
	}
	var ops []any
	for _, q := range queues {
		path, err := s.queuePath(pauseQueuesDir, q)
		if err != nil {
			return 0, fmt.Errorf("set pauses: %w", err)
		}
		if set[q] {
			ops = append(ops, &zk.SetDataRequest{Path: path, Data: data, Version: -1})
		} else {
			ops = append(ops, &zk.CreateRequest{Path: path, Data: data, Acl: s.acl, Flags: zk.FlagPersistent})
		}
	}
	return s.pauseMultis(ctx, "set pauses", ops, queues, func(q string) error {
		return s.Pauses().Set(ctx, drover.PauseQueue, q, p)
	})
}

// ClearQueues removes the pause flags of queues, as Clear would
// for each, in few round trips (SetQueues'): queues without a flag
// are skipped. It returns how many flags were removed.
func (ps Pauses) ClearQueues(ctx context.Context, queues []string) (int, error) {
	s := ps.s
	set, err := s.pausedQueueNames(ctx)
	if err != nil {
		return 0, fmt.Errorf("clear pauses: %w", err)
	}
	var ops []any
	var names []string
	for _, q := range queues {
		if !set[q] {
			continue
		}
		path, err := s.queuePath(pauseQueuesDir, q)
		if err != nil {
			return 0, fmt.Errorf("clear pauses: %w", err)
		}
		ops = append(ops, &zk.DeleteRequest{Path: path, Version: -1})
		names = append(names, q)
	}
	return s.pauseMultis(ctx, "clear pauses", ops, names, func(q string) error {
		return s.Pauses().Clear(ctx, drover.PauseQueue, q)
	})
}

// pausedQueueNames lists the queues with a pause flag: one request.
func (s *Session) pausedQueueNames(ctx context.Context) (map[string]bool, error) {
	names, err := children(ctx, s, s.path(pauseQueuesDir))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("list pause flags: %w", err)
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}

// pauseMultis sends ops (ops[i] is the flag of queues[i]) in multis cut at
// pauseBatchOps and batchBytes, writeParallelism in flight; a multi refused
// for one of its operations is redone through one(q) per queue.
func (s *Session) pauseMultis(ctx context.Context, what string, ops []any, queues []string, one func(q string) error) (int, error) {
	type chunk struct{ from, to int }
	var chunks []chunk
	for i := 0; i < len(ops); {
		j, size := i, 0
		for j < len(ops) && j-i < pauseBatchOps && (j == i || size+opSize(ops[j]) <= batchBytes) {
			size += opSize(ops[j])
			j++
		}
		chunks = append(chunks, chunk{i, j})
		i = j
	}
	type outcome struct {
		n   int
		err error
	}
	outs := parallelMapN(ctx, writeParallelism, chunks, func(c chunk) outcome {
		res, err := bounded(ctx, s, func(conn zkConn) ([]zk.MultiResponse, error) { return conn.Multi(ops[c.from:c.to]...) })
		if err == nil {
			return outcome{n: c.to - c.from}
		}
		if !errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, zk.ErrNoNode) && failedOp(res) < 0 {
			return outcome{err: err}
		}
		o := outcome{}
		for _, q := range queues[c.from:c.to] {
			if err := one(q); err != nil {
				o.err = err
				return o
			}
			o.n++
		}
		return o
	})
	n := 0
	var errs []error
	for _, o := range outs {
		n += o.n
		errs = append(errs, o.err)
	}
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return n, fmt.Errorf("%s: %w", what, err)
	}
	return n, nil
}

// Of is Pauses for a page of queues: the everything flag, every
// member flag, and the flags of queues only (one read each, in parallel),
// so that a console page showing 100 of 100,000 queues does not read every
// queue's flag. Queues holds only those of queues that are paused.
func (ps Pauses) Of(ctx context.Context, queues []string) (PauseSet, error) {
	s := ps.s
	members := newDirCache(s.path(pauseMembersDir))
	if err := members.read(ctx, s); err != nil {
		return PauseSet{}, fmt.Errorf("read pause flags: %w", err)
	}
	all, err := getIfAny(ctx, s, s.path(pauseAllNode))
	if err != nil {
		return PauseSet{}, fmt.Errorf("read pause flags: %w", err)
	}
	type read struct {
		nd  *nodeData
		err error
	}
	reads := parallelMap(ctx, queues, func(q string) read {
		p, err := s.queuePath(pauseQueuesDir, q)
		if err != nil {
			return read{err: err}
		}
		nd, err := getIfAny(ctx, s, p)
		return read{nd, err}
	})
	qs := newDirCache(s.path(pauseQueuesDir))
	for i, r := range reads {
		if r.err != nil {
			return PauseSet{}, fmt.Errorf("read pause flags: %w", r.err)
		}
		if r.nd != nil {
			qs.nodes[queues[i]] = *r.nd
		}
	}
	return pausesOf(s.path(pauseAllNode), all, qs, members), nil
}
