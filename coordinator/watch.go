package coordinator

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZooKeeper watches fire once, survive reconnects of the same session, and
// cannot be removed; arming the same watch again before it fired adds a
// second registration in the library (a leak when done in a loop). A watchSet
// therefore tracks which watches are armed and a refresh re-arms only those
// that fired.
//
// Fan-in: the library delivers every watch event to the session's event
// callback (with its path) before it sends it on the watch's own channel.
// The session's watchHub routes that event to the watch sets interested in
// the path, so a watch costs a map entry — not a goroutine and not a select
// case. One select over every watch's channel panicked beyond 65,536 cases
// (reflect.Select's limit) and cost O(watches) per event; the hub costs O(1).
// The per-watch channels the library returns are never read: it closes and
// forgets them when the watch fires.

type watchKind byte

const (
	watchChildren watchKind = 'c'
	watchNode     watchKind = 'n' // data or existence
)

type watchKey struct {
	kind watchKind
	path string
}

// watchState is one key's state in a watchSet.
type watchState byte

const (
	watchArming      watchState = iota + 1 // the request that arms it is in flight
	watchArmedState                        // armed: an event will report a change
	watchFiredArming                       // fired while arming: the read may be stale
)

// watchHub routes the watch events of one session to the watch sets that
// armed watches on the event's path. deliver never blocks.
type watchHub struct {
	mu     sync.Mutex
	byPath map[string]hubPath // path → the sets with keys on it
}

// hubPath is the sets with keys on one path, and how many keys each. A
// path has one set or two (a member's config watch follows each owned
// queue's node; the rebalance leader's registry watch may watch the same
// node), so two are kept inline: a map per path cost ~190 bytes a watched
// queue (docs/decisions.md, "Issue 14: one compact record per owned
// queue").
type hubPath struct {
	sets [2]*watchSet      // sets with keys on the path; nil when free
	n    [2]int32          // how many keys each has on it
	more map[*watchSet]int // any further sets
}

func newWatchHub() *watchHub { return &watchHub{byPath: map[string]hubPath{}} }

// deliver hands a library event to the interested watch sets. It is called
// from the library's receive loop and must not block.
func (h *watchHub) deliver(ev zk.Event) {
	if ev.Type == zk.EventSession || ev.Path == "" {
		return
	}
	var kinds []watchKind
	switch ev.Type {
	case zk.EventNodeCreated, zk.EventNodeDataChanged:
		kinds = []watchKind{watchNode}
	case zk.EventNodeChildrenChanged:
		kinds = []watchKind{watchChildren}
	default: // deleted, not watching (invalidated): every watch of the path
		kinds = []watchKind{watchNode, watchChildren}
	}
	h.mu.Lock()
	e := h.byPath[ev.Path]
	sets := make([]*watchSet, 0, len(e.sets)+len(e.more))
	for _, ws := range e.sets {
		if ws != nil {
			sets = append(sets, ws)
		}
	}
	for ws := range e.more {
		sets = append(sets, ws)
	}
	h.mu.Unlock()
	for _, ws := range sets {
		for _, k := range kinds {
			ws.fired(watchKey{k, ev.Path})
		}
	}
}

func (h *watchHub) add(ws *watchSet, p string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.byPath[p]
	h.byPath[p] = e.add(ws)
}

func (h *watchHub) remove(ws *watchSet, p string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.byPath[p]
	if !ok {
		return
	}
	if e = e.remove(ws); e.empty() {
		delete(h.byPath, p)
		return
	}
	h.byPath[p] = e
}

// add counts a key of ws on the path.
func (e hubPath) add(ws *watchSet) hubPath {
	for i, s := range e.sets {
		if s == ws {
			e.n[i]++
			return e
		}
	}
	if e.more[ws] == 0 {
		for i, s := range e.sets {
			if s == nil {
				e.sets[i], e.n[i] = ws, 1
				return e
			}
		}
	}
	if e.more == nil {
		e.more = map[*watchSet]int{}
	}
	e.more[ws]++
	return e
}

// remove drops a key of ws on the path.
func (e hubPath) remove(ws *watchSet) hubPath {
	for i, s := range e.sets {
		if s == ws {
			if e.n[i]--; e.n[i] <= 0 {
				e.sets[i], e.n[i] = nil, 0
			}
			return e
		}
	}
	if e.more[ws] <= 1 {
		delete(e.more, ws)
	} else {
		e.more[ws]--
	}
	if len(e.more) == 0 {
		e.more = nil
	}
	return e
}

func (e hubPath) empty() bool { return e.sets[0] == nil && e.sets[1] == nil && len(e.more) == 0 }

// paths returns how many paths the hub routes (for tests and figures).
func (h *watchHub) paths() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.byPath)
}

// watchSet tracks the watches of one watching goroutine. A key is armed in
// two steps: prepare before the request that arms it is sent (so an event
// that overtakes the reply is not lost), then armed or cancel once the reply
// is in. wait blocks until an armed watch fired. Safe for concurrent use (a
// refresh reads many nodes in parallel).
type watchSet struct {
	hub    *watchHub
	notify chan struct{} // one pending signal: some watch fired

	mu    sync.Mutex
	state map[watchKey]watchState
}

func newWatchSet(hub *watchHub) *watchSet {
	return &watchSet{hub: hub, notify: make(chan struct{}, 1), state: map[watchKey]watchState{}}
}

// isArmed reports whether k is armed or being armed.
func (w *watchSet) isArmed(k watchKey) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.state[k]
	return st == watchArming || st == watchArmedState
}

// prepare marks k as being armed; call it before sending the request.
func (w *watchSet) prepare(k watchKey) {
	w.mu.Lock()
	_, known := w.state[k]
	w.state[k] = watchArming
	w.mu.Unlock()
	if !known {
		w.hub.add(w, k.path)
	}
}

// armed records that the request arming k succeeded. When an event for k
// arrived in between, k stays unarmed and wait reports it, so the caller
// reads again.
func (w *watchSet) armed(k watchKey) {
	w.mu.Lock()
	fired := w.state[k] == watchFiredArming
	if !fired {
		w.state[k] = watchArmedState
	}
	w.mu.Unlock()
	if fired {
		w.forget(k)
		w.signal()
	}
}

// cancel records that the request arming k failed (no watch was set).
func (w *watchSet) cancel(k watchKey) { w.forget(k) }

// forget drops k.
func (w *watchSet) forget(k watchKey) {
	w.mu.Lock()
	_, known := w.state[k]
	delete(w.state, k)
	w.mu.Unlock()
	if known {
		w.hub.remove(w, k.path)
	}
}

// fired takes an event for k from the hub.
func (w *watchSet) fired(k watchKey) {
	w.mu.Lock()
	st := w.state[k]
	switch st {
	case watchArming:
		w.state[k] = watchFiredArming
	case watchArmedState:
		delete(w.state, k)
	}
	w.mu.Unlock()
	if st == watchArmedState {
		w.hub.remove(w, k.path)
		w.signal()
	}
}

func (w *watchSet) signal() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// close forgets every key (the watching goroutine ends).
func (w *watchSet) close() {
	w.mu.Lock()
	keys := make([]watchKey, 0, len(w.state))
	for k := range w.state {
		keys = append(keys, k)
	}
	w.mu.Unlock()
	for _, k := range keys {
		w.forget(k)
	}
}

// wait blocks until at least one armed watch has fired since the last wait
// (fired watches are no longer armed, so the next refresh re-reads them). It
// returns false when ctx ends or done is closed first.
func (w *watchSet) wait(ctx context.Context, done <-chan struct{}) bool {
	select {
	case <-w.notify:
		return true
	case <-ctx.Done():
		return false
	case <-done:
		return false
	}
}

// watchLoop delivers refresh's result on the returned channel now and after
// every change, until ctx ends or the session is lost; then it closes the
// channel. The channel holds only the latest value: an unread value is
// replaced by a newer one. Failed refreshes are logged and retried with
// backoff.
func watchLoop[T any](ctx context.Context, s *Session, what string, refresh func(context.Context, *watchSet) (T, error)) <-chan T {
	out := make(chan T, 1)
	go func() {
		defer close(out)
		ws := newWatchSet(s.hub)
		defer ws.close()
		backoff := 50 * time.Millisecond
		for {
			v, err := refresh(ctx, ws)
			switch {
			case err == nil:
				backoff = 50 * time.Millisecond
				select {
				case <-out:
				default:
				}
				out <- v
			case ctx.Err() != nil || s.Err() != nil:
				return
			case errors.Is(err, errShareIncomplete):
				// Being written: the watch reports the end of the write.
			case errors.Is(err, errUnchanged):
				// Nothing new to deliver.
			default:
				s.log.Warn("watch refresh failed; retrying", "watch", what, "error", err, "retry_in", backoff)
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
					return
				case <-s.done:
					return
				}
				backoff = min(backoff*2, s.cfg.SessionTimeout/4)
				continue
			}
			if !ws.wait(ctx, s.done) {
				return
			}
		}
	}()
	return out
}

// errUnchanged: a refresh found nothing to deliver (what fired the watch
// changed nothing its reader needs).
var errUnchanged = errors.New("unchanged")
