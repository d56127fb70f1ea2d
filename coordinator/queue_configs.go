package coordinator

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// WatchQueueConfigs keeps a data watch on /queues/<q> for each queue named
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
			ws      = newWatchSet()
			pending = map[string]QueueEntry{} // undelivered, latest per queue
			order   []string                  // delivery order of pending
			retry   <-chan time.Time
		)
		for {
			// Read and arm every wanted queue whose watch is not armed.
			failed := false
			for q := range want {
				k := watchKey{watchNode, s.path(queuesDir, q)}
				if ws.armed[k] {
					continue
				}
				e, ch, err := s.readQueueW(ctx, q)
				if err != nil {
					if ctx.Err() != nil || s.Err() != nil {
						return
					}
					failed = true
					continue
				}
				ws.arm(k, ch)
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
			keys := make([]watchKey, 0, len(ws.chans))
			cases := []reflect.SelectCase{
				{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
				{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.done)},
				{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(names)},
				{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(retry)},
			}
			if len(order) > 0 {
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectSend, Chan: reflect.ValueOf(out), Send: reflect.ValueOf(pending[order[0]])})
			} else {
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv}) // a nil channel: never ready
			}
			for k, ch := range ws.chans {
				keys = append(keys, k)
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
			}
			i, v, ok := reflect.Select(cases)
			switch i {
			case 0, 1:
				return
			case 2:
				if !ok {
					return
				}
				want = v.Interface().(map[string]bool)
			case 3:
			case 4:
				delete(pending, order[0])
				order = order[1:]
			default:
				k := keys[i-5]
				ws.fire(k)
				// A watch of a queue no longer wanted is not armed again.
			}
		}
	}()
	return out
}

// readQueueW reads /queues/<q> and leaves a watch on it: a data watch, or an
// existence watch when the node is missing.
func (s *Session) readQueueW(ctx context.Context, q string) (QueueEntry, <-chan zk.Event, error) {
	p := s.path(queuesDir, q)
	type read struct {
		nd     nodeData
		exists bool
		ch     <-chan zk.Event
	}
	r, err := bounded(ctx, s, func(c zkConn) (read, error) {
		data, st, ch, err := c.GetW(p)
		if errors.Is(err, zk.ErrNoNode) {
			exists, _, ch, err := c.ExistsW(p)
			if err == nil && exists {
				return read{}, zk.ErrNoNode // created meanwhile: read again
			}
			return read{exists: false, ch: ch}, err
		}
		if err != nil {
			return read{}, err
		}
		return read{nd: nodeData{data, *st}, exists: true, ch: ch}, nil
	})
	if err != nil {
		return QueueEntry{}, nil, err
	}
	if !r.exists {
		return QueueEntry{Name: q, Err: errQueueNotFound(q)}, r.ch, nil
	}
	return decodeQueue(p, q, r.nd), r.ch, nil
}

func errQueueNotFound(q string) error {
	return fmt.Errorf("queue %s: %w", q, drover.ErrQueueNotFound)
}
