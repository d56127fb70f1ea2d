package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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

// CreateQueue stores cfg (validated) as /queues/<cfg.Name>. It fails with an
// error wrapping ErrQueueExists when the queue is already configured.
func (s *Session) CreateQueue(ctx context.Context, cfg drover.QueueConfig) error {
	p, data, err := s.encodeQueue(cfg)
	if err != nil {
		return fmt.Errorf("create queue: %w", err)
	}
	_, err = bounded(ctx, s, func(c zkConn) (string, error) {
		return c.Create(p, data, zk.FlagPersistent, s.acl)
	})
	if errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create queue %s: %w", cfg.Name, ErrQueueExists)
	}
	if err != nil {
		return fmt.Errorf("create queue %s: %w", cfg.Name, err)
	}
	return nil
}

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
	p, err := s.queuePath(queuesDir, name)
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
	p, err := s.queuePath(queuesDir, name)
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
	d := newDirCache(s.path(queuesDir))
	if err := d.read(ctx, s); err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	return queuesOf(d), nil
}

// WatchQueues delivers the queue list now and after every change (a queue
// added, removed or reconfigured) until ctx ends or the session is lost, then
// closes the channel. Only the latest list is kept for a slow reader.
func (s *Session) WatchQueues(ctx context.Context) <-chan []QueueEntry {
	d := newDirCache(s.path(queuesDir))
	return watchLoop(ctx, s, "queues", func(ctx context.Context, ws *watchSet) ([]QueueEntry, error) {
		if err := d.refresh(ctx, s, ws); err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		return queuesOf(d), nil
	})
}

func (s *Session) encodeQueue(cfg drover.QueueConfig) (string, []byte, error) {
	if err := cfg.Validate(); err != nil {
		return "", nil, err
	}
	p, err := s.queuePath(queuesDir, cfg.Name)
	if err != nil {
		return "", nil, err
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("encode queue %s: %w", cfg.Name, err)
	}
	return p, data, nil
}

func queuesOf(d *dirCache) []QueueEntry {
	out := make([]QueueEntry, 0, len(d.nodes))
	for _, name := range d.names() {
		nd := d.nodes[name]
		out = append(out, decodeQueue(d.dir+"/"+name, name, nd))
	}
	return out
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
