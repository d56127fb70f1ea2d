package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// ConfigWatch follows the configurations of a changing set of queues — the
// ones a member owns — with one data watch on /queues/<bucket>/<q> each. A
// member's reconciler reads a queue's configuration once, when it claims the
// queue (Read, which arms the watch), and then hears of changes only
// (Changes). Watching the whole registry would cost every member a read and
// a watch per queue in the fleet; following a set sent whole on every change
// cost O(owned) per claim, O(owned²) for a member gaining thousands of
// queues.
type ConfigWatch struct {
	s   *Session
	ws  *watchSet
	out chan QueueEntry

	mu   sync.Mutex
	want map[string]bool // queues followed
}

// WatchQueueConfigs starts a ConfigWatch that follows no queue yet. It runs
// until ctx ends or the session is lost; then Changes is closed.
func (s *Session) WatchQueueConfigs(ctx context.Context) *ConfigWatch {
	w := &ConfigWatch{s: s, ws: newWatchSet(s.hub), out: make(chan QueueEntry), want: map[string]bool{}}
	go w.run(ctx)
	return w
}

// Read reads queue's configuration and follows it from now on: a later
// change is delivered on Changes. An entry whose config node is missing
// comes with Err wrapping drover.ErrQueueNotFound (its creation is
// followed), a corrupt one with Err naming the node; the error return is
// for a read that failed (the queue is then not followed). Entries with
// equal task routes share one Config.Tasks map: read it, never modify it.
func (w *ConfigWatch) Read(ctx context.Context, queue string) (QueueEntry, error) {
	if err := drover.ValidateQueueName(queue); err != nil {
		return QueueEntry{}, fmt.Errorf("read queue config: %w", err)
	}
	k := watchKey{watchNode, w.s.queueNodePath(queue)}
	if w.ws.isArmed(k) {
		// Followed already: a plain read.
		w.follow(queue)
		e, err := w.s.Queue(ctx, queue)
		switch {
		case errors.Is(err, drover.ErrQueueNotFound):
			return QueueEntry{Name: queue, Err: errQueueNotFound(queue)}, nil
		case err != nil && e.Err == nil:
			return QueueEntry{}, err
		}
		return w.s.routes.shared(e), nil
	}
	w.ws.prepare(k) // before following, so that run does not read it too
	w.follow(queue)
	e, err := w.s.readQueueW(ctx, queue)
	if err != nil {
		w.ws.cancel(k)
		w.mu.Lock()
		delete(w.want, queue)
		w.mu.Unlock()
		return QueueEntry{}, fmt.Errorf("read queue config %s: %w", queue, err)
	}
	w.ws.armed(k)
	return e, nil
}

func (w *ConfigWatch) follow(queue string) {
	w.mu.Lock()
	w.want[queue] = true
	w.mu.Unlock()
}

// Forget stops following queue. Its watch stays armed on the server until
// it fires (ZooKeeper cannot remove one); the event is then ignored.
func (w *ConfigWatch) Forget(queue string) {
	w.mu.Lock()
	delete(w.want, queue)
	w.mu.Unlock()
	w.ws.forget(watchKey{watchNode, w.s.queueNodePath(queue)})
}

// Changes delivers the entry of a followed queue after each change of its
// configuration. The reader must keep reading: undelivered entries queue up
// (one per queue, the latest).
func (w *ConfigWatch) Changes() <-chan QueueEntry { return w.out }

// run re-reads the followed queues whose watch fired and delivers them.
func (w *ConfigWatch) run(ctx context.Context) {
	defer close(w.out)
	defer w.ws.close()
	var (
		pending = map[string]QueueEntry{} // undelivered, latest per queue
		order   []string                  // delivery order of pending
		retry   <-chan time.Time
	)
	for {
		// A followed queue whose watch is neither armed nor being armed by
		// Read fired: read it again. Watches fire rarely (an operator
		// changed a config), so the pass over the set is cheap.
		w.mu.Lock()
		var fired []string
		for q := range w.want {
			if !w.ws.isArmed(watchKey{watchNode, w.s.queueNodePath(q)}) {
				fired = append(fired, q)
			}
		}
		w.mu.Unlock()
		failed := false
		for _, q := range fired {
			k := watchKey{watchNode, w.s.queueNodePath(q)}
			w.ws.prepare(k)
			e, err := w.s.readQueueW(ctx, q)
			if err != nil {
				w.ws.cancel(k)
				if ctx.Err() != nil || w.s.Err() != nil {
					return
				}
				failed = true
				continue
			}
			w.ws.armed(k)
			w.mu.Lock()
			followed := w.want[q]
			w.mu.Unlock()
			if !followed { // forgotten meanwhile
				w.ws.forget(k)
				continue
			}
			if _, dup := pending[q]; !dup {
				order = append(order, q)
			}
			pending[q] = e
		}
		retry = nil
		if failed {
			retry = time.After(w.s.cfg.SessionTimeout / 4)
		}
		var send chan QueueEntry
		var next QueueEntry
		if len(order) > 0 {
			send, next = w.out, pending[order[0]]
		}
		select {
		case <-ctx.Done():
			return
		case <-w.s.done:
			return
		case <-retry:
		case send <- next:
			delete(pending, order[0])
			order = order[1:]
		case <-w.ws.notify:
		}
	}
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
	return s.routes.shared(decodeQueue(p, q, r.nd)), nil
}

func errQueueNotFound(q string) error {
	return fmt.Errorf("queue %s: %w", q, drover.ErrQueueNotFound)
}
