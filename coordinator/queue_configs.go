package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// WatchQueueConfigs keeps a data watch on /queues/<bucket>/<q> for each queue named
// in the latest set received on names, and delivers each queue's entry when
// it is first read and after every change, until ctx ends or the session is
// lost (then the channel is closed). A member's reconciler watches only the
// queues it owns this way: watching the whole registry would cost every
// member one read and one watch per queue in the fleet.
//
// names is read as "the latest set": send the whole set on every change.
// Entries of a queue whose config node is missing come with Err wrapping
// drover.ErrQueueNotFound. The reader must keep reading: undelivered entries
// queue up in the watcher (one per queue, the latest).
func (s *Session) WatchQueueConfigs(ctx context.Context, names <-chan map[string]bool) <-chan QueueEntry {
	out := make(chan QueueEntry)
	go func() {
		defer close(out)
		var (
			want    = map[string]bool{}
			ws      = newWatchSet(s.hub)
			pending = map[string]QueueEntry{} // undelivered, latest per queue
			order   []string                  // delivery order of pending
			retry   <-chan time.Time
		)
		defer ws.close()
		for {
			// Read and arm every wanted queue whose watch is not armed.
			failed := false
			for q := range want {
				k := watchKey{watchNode, s.queueNodePath(q)}
				if ws.isArmed(k) {
					continue
				}
				ws.prepare(k)
				e, err := s.readQueueW(ctx, q)
				if err != nil {
					ws.cancel(k)
					if ctx.Err() != nil || s.Err() != nil {
						return
					}
					failed = true
					continue
				}
				ws.armed(k)
				if _, dup := pending[q]; !dup {
					order = append(order, q)
				}
				pending[q] = e
			}
			retry = nil
			if failed {
				retry = time.After(s.cfg.SessionTimeout / 4)
			}
			// Wait for: a new set, a fired watch, room to deliver, a retry.
			var send chan QueueEntry
			var next QueueEntry
			if len(order) > 0 {
				send, next = out, pending[order[0]]
			}
			select {
			case <-ctx.Done():
				return
			case <-s.done:
				return
			case set, ok := <-names:
				if !ok {
					return
				}
				for q := range want {
					if !set[q] {
						// Its watch stays armed on the server until it fires;
						// the set no longer follows it.
						ws.forget(watchKey{watchNode, s.queueNodePath(q)})
					}
				}
				want = set
			case <-retry:
			case send <- next:
				delete(pending, order[0])
				order = order[1:]
			case <-ws.notify:
			}
		}
	}()
	return out
}

// readQueueW reads /queues/<bucket>/<q> and leaves a watch on it: a data watch, or an
// existence watch when the node is missing.
func (s *Session) readQueueW(ctx context.Context, q string) (QueueEntry, error) {
	p := s.queueNodePath(q)
	type read struct {
		nd     nodeData
		exists bool
	}
	r, err := bounded(ctx, s, func(c zkConn) (read, error) {
		data, st, _, err := c.GetW(p)
		if errors.Is(err, zk.ErrNoNode) {
			exists, _, _, err := c.ExistsW(p)
			if err == nil && exists {
				return read{}, zk.ErrNoNode // created meanwhile: read again
			}
			return read{exists: false}, err
		}
		if err != nil {
			return read{}, err
		}
		return read{nd: nodeData{data, *st}, exists: true}, nil
	})
	if err != nil {
		return QueueEntry{}, err
	}
	if !r.exists {
		return QueueEntry{Name: q, Err: errQueueNotFound(q)}, nil
	}
	return decodeQueue(p, q, r.nd), nil
}

func errQueueNotFound(q string) error {
	return fmt.Errorf("queue %s: %w", q, drover.ErrQueueNotFound)
}
