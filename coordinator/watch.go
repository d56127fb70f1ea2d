package coordinator

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZooKeeper watches fire once, survive reconnects of the same session, and
// cannot be removed; arming the same watch again before it fired adds a
// second registration in the library (a leak when done in a loop). A watchSet
// therefore tracks which watches are armed and a refresh re-arms only those
// that fired.

type watchKind byte

const (
	watchChildren watchKind = 'c'
	watchNode     watchKind = 'n' // data or existence
)

type watchKey struct {
	kind watchKind
	path string
}

// watchSet tracks the armed watches of one watching goroutine, and their
// channels: the goroutine waits on all of them at once (wait), so a watch
// costs a select case, not a goroutine — a member watching 10,000 queue
// nodes does not park 10,000 goroutines.
type watchSet struct {
	armed map[watchKey]bool
	chans map[watchKey]<-chan zk.Event
}

func newWatchSet() *watchSet {
	return &watchSet{armed: map[watchKey]bool{}, chans: map[watchKey]<-chan zk.Event{}}
}

// arm records k as armed with the channel the library fires it on.
func (w *watchSet) arm(k watchKey, ch <-chan zk.Event) {
	w.armed[k] = true
	w.chans[k] = ch
}

// wait blocks until at least one armed watch fires, and marks every watch
// that has fired by then as no longer armed. It returns false when ctx ends
// or done is closed first.
func (w *watchSet) wait(ctx context.Context, done <-chan struct{}) bool {
	keys := make([]watchKey, 0, len(w.chans))
	cases := make([]reflect.SelectCase, 0, len(w.chans)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(done)})
	for k, ch := range w.chans {
		keys = append(keys, k)
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	i, _, _ := reflect.Select(cases)
	if i < 2 {
		return false
	}
	w.fire(keys[i-2])
	// Coalesce the watches that fired together.
	for k, ch := range w.chans {
		select {
		case <-ch:
			w.fire(k)
		default:
		}
	}
	return true
}

func (w *watchSet) fire(k watchKey) {
	w.armed[k] = false
	delete(w.chans, k)
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
		ws := newWatchSet()
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

// nodeData is one node's data and stat as last read.
type nodeData struct {
	data []byte
	stat zk.Stat
}

// dirCache mirrors the children of one directory and their data, keeping a
// children watch on the directory and a data watch on every child.
type dirCache struct {
	dir   string
	nodes map[string]nodeData
}

func newDirCache(dir string) *dirCache { return &dirCache{dir: dir, nodes: map[string]nodeData{}} }

// refresh re-reads what changed since the last refresh and re-arms the
// watches that fired.
func (d *dirCache) refresh(ctx context.Context, s *Session, ws *watchSet) error {
	ck := watchKey{watchChildren, d.dir}
	if !ws.armed[ck] {
		type listing struct {
			names []string
			ch    <-chan zk.Event
		}
		l, err := bounded(ctx, s, func(c zkConn) (listing, error) {
			names, _, ch, err := c.ChildrenW(d.dir)
			return listing{names, ch}, err
		})
		if err != nil {
			return err
		}
		ws.arm(ck, l.ch)
		present := map[string]bool{}
		for _, n := range l.names {
			present[n] = true
		}
		for n := range d.nodes {
			if !present[n] {
				delete(d.nodes, n)
			}
		}
		for n := range present {
			if _, ok := d.nodes[n]; !ok {
				d.nodes[n] = nodeData{} // to be read below
				ws.armed[watchKey{watchNode, d.dir + "/" + n}] = false
			}
		}
	}
	for n := range d.nodes {
		k := watchKey{watchNode, d.dir + "/" + n}
		if ws.armed[k] {
			continue
		}
		type read struct {
			nd nodeData
			ch <-chan zk.Event
		}
		r, err := bounded(ctx, s, func(c zkConn) (read, error) {
			data, stat, ch, err := c.GetW(k.path)
			if err != nil {
				return read{}, err
			}
			return read{nodeData{data, *stat}, ch}, nil
		})
		if errors.Is(err, zk.ErrNoNode) {
			delete(d.nodes, n) // the children watch reports the deletion too
			continue
		}
		if err != nil {
			return err
		}
		ws.arm(k, r.ch)
		d.nodes[n] = r.nd
	}
	return nil
}

// names returns the cached child names, sorted.
func (d *dirCache) names() []string {
	names := make([]string, 0, len(d.nodes))
	for n := range d.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// readNode reads one node, arming an existence or data watch when ws does not
// hold one yet; a missing node is returned as nil.
func readNode(ctx context.Context, s *Session, ws *watchSet, p string) (*nodeData, error) {
	k := watchKey{watchNode, p}
	if ws.armed[k] {
		return bounded(ctx, s, func(c zkConn) (*nodeData, error) {
			data, stat, err := c.Get(p)
			if errors.Is(err, zk.ErrNoNode) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			return &nodeData{data, *stat}, nil
		})
	}
	type read struct {
		nd *nodeData
		ch <-chan zk.Event
	}
	r, err := bounded(ctx, s, func(c zkConn) (read, error) {
		data, stat, ch, err := c.GetW(p)
		if err == nil {
			return read{&nodeData{data, *stat}, ch}, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return read{}, err
		}
		exists, _, ch, err := c.ExistsW(p)
		if err != nil || !exists {
			return read{nil, ch}, err
		}
		// Created in between: ExistsW armed a data watch; read the data
		// without arming another one.
		data, stat, err = c.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return read{nil, ch}, nil
		}
		if err != nil {
			return read{}, err
		}
		return read{&nodeData{data, *stat}, ch}, nil
	})
	if err != nil {
		return nil, err
	}
	ws.arm(k, r.ch)
	return r.nd, nil
}

// read fills the cache once, without watches.
func (d *dirCache) read(ctx context.Context, s *Session) error {
	names, err := bounded(ctx, s, func(c zkConn) ([]string, error) {
		names, _, err := c.Children(d.dir)
		return names, err
	})
	if err != nil {
		return err
	}
	for _, n := range names {
		nd, err := bounded(ctx, s, func(c zkConn) (nodeData, error) {
			data, stat, err := c.Get(d.dir + "/" + n)
			if err != nil {
				return nodeData{}, err
			}
			return nodeData{data, *stat}, nil
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		d.nodes[n] = nd
	}
	return nil
}
