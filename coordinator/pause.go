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

// SetPause sets (or overwrites) the pause flag of scope: drover.PauseAll with
// an empty name, drover.PauseQueue with a queue name, drover.PauseMember with
// a member name.
func (s *Session) SetPause(ctx context.Context, scope drover.PauseScope, name string, p drover.Pause) error {
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

// ClearPause removes the pause flag of scope and name; clearing a flag that
// is not set is not an error.
func (s *Session) ClearPause(ctx context.Context, scope drover.PauseScope, name string) error {
	path, err := s.pausePath(scope, name)
	if err != nil {
		return fmt.Errorf("clear pause: %w", err)
	}
	_, err = bounded(ctx, s, func(c zkConn) (struct{}, error) { return struct{}{}, c.Delete(path, -1) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("clear pause %s: %w", path, err)
	}
	return nil
}

// Pauses reads every pause flag.
func (s *Session) Pauses(ctx context.Context) (PauseSet, error) {
	queues, members := newDirCache(s.path(pauseQueuesDir)), newDirCache(s.path(pauseMembersDir))
	if err := queues.read(ctx, s); err != nil {
		return PauseSet{}, fmt.Errorf("read pause flags: %w", err)
	}
	if err := members.read(ctx, s); err != nil {
		return PauseSet{}, fmt.Errorf("read pause flags: %w", err)
	}
	all, err := bounded(ctx, s, func(c zkConn) (*nodeData, error) {
		data, st, err := c.Get(s.path(pauseAllNode))
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return &nodeData{data, *st}, nil
	})
	if err != nil {
		return PauseSet{}, fmt.Errorf("read pause flags: %w", err)
	}
	return pausesOf(s.path(pauseAllNode), all, queues, members), nil
}

// WatchPauses delivers every pause flag now and after every change until ctx
// ends or the session is lost, then closes the channel. Only the latest set
// is kept for a slow reader.
func (s *Session) WatchPauses(ctx context.Context) <-chan PauseSet {
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
