package coordinator

import (
	"context"
	"errors"
	"sort"
	"sync"

	"github.com/go-zookeeper/zk"
)

// The cached, watched reads that watch loops refresh: a directory's
// children and their data (dirCache), one node (readNode), a listing
// (listW). watch.go holds the watches themselves (watchHub, watchSet,
// watchLoop).

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
	return refreshDirs(ctx, s, ws, []*dirCache{d})
}

// refreshDirs refreshes several directory caches with one watch set: first
// the listings whose watch fired, then every node whose watch fired. Reads
// go out in parallel (readParallelism at a time): a leader reading 100,000
// queue configs one round trip at a time would take minutes.
func refreshDirs(ctx context.Context, s *Session, ws *watchSet, dirs []*dirCache) error {
	var relist []*dirCache
	for _, d := range dirs {
		if !ws.isArmed(watchKey{watchChildren, d.dir}) {
			relist = append(relist, d)
		}
	}
	type listing struct {
		names []string
		err   error
	}
	lists := parallelMap(ctx, relist, func(d *dirCache) listing {
		names, err := listW(ctx, s, ws, d.dir)
		return listing{names, err}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, l := range lists {
		d := relist[i]
		if errors.Is(l.err, zk.ErrNoNode) {
			l.names, l.err = nil, nil // the directory is gone: so are its nodes
		}
		if l.err != nil {
			return l.err
		}
		present := make(map[string]bool, len(l.names))
		for _, n := range l.names {
			present[n] = true
		}
		for n := range d.nodes {
			if !present[n] {
				delete(d.nodes, n)
				ws.forget(watchKey{watchNode, d.dir + "/" + n})
			}
		}
		for n := range present {
			if _, ok := d.nodes[n]; !ok {
				d.nodes[n] = nodeData{} // to be read below
			}
		}
	}
	type stale struct {
		d    *dirCache
		name string
	}
	var todo []stale
	for _, d := range dirs {
		for n := range d.nodes {
			if !ws.isArmed(watchKey{watchNode, d.dir + "/" + n}) {
				todo = append(todo, stale{d, n})
			}
		}
	}
	type read struct {
		nd  nodeData
		err error
	}
	reads := parallelMap(ctx, todo, func(st stale) read {
		k := watchKey{watchNode, st.d.dir + "/" + st.name}
		ws.prepare(k)
		nd, err := bounded(ctx, s, func(c zkConn) (nodeData, error) {
			data, stat, _, err := c.GetW(k.path)
			if err != nil {
				return nodeData{}, err
			}
			return nodeData{data, *stat}, nil
		})
		if err != nil {
			ws.cancel(k)
		} else {
			ws.armed(k)
		}
		return read{nd, err}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	var firstErr error
	for i, r := range reads {
		st := todo[i]
		switch {
		case errors.Is(r.err, zk.ErrNoNode):
			delete(st.d.nodes, st.name) // the children watch reports the deletion too
		case r.err != nil:
			if firstErr == nil {
				firstErr = r.err
			}
		default:
			st.d.nodes[st.name] = r.nd
		}
	}
	return firstErr
}

// readParallelism bounds the reads one refresh has in flight; writeParallelism
// the batched writes (multis of hundreds of operations, which the server
// applies one at a time anyway).
const (
	readParallelism  = 64
	writeParallelism = 4
)

// parallelMap calls f for every item, readParallelism at a time, and returns
// the results in the order of items. It stops starting calls when ctx ends
// (the results of those not started are zero).
func parallelMap[T, R any](ctx context.Context, items []T, f func(T) R) []R {
	return parallelMapN(ctx, readParallelism, items, f)
}

// parallelMapN is parallelMap with n calls at a time.
func parallelMapN[T, R any](ctx context.Context, n int, items []T, f func(T) R) []R {
	out := make([]R, len(items))
	if len(items) == 1 {
		out[0] = f(items[0])
		return out
	}
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, it := range items {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = f(it)
		}()
	}
	wg.Wait()
	return out
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

// decodeDir decodes every cached node with decode, in name order.
func decodeDir[T any](d *dirCache, decode func(p, name string, nd nodeData) T) []T {
	out := make([]T, 0, len(d.nodes))
	for _, n := range d.names() {
		out = append(out, decode(d.dir+"/"+n, n, d.nodes[n]))
	}
	return out
}

// readNode reads one node, arming an existence or data watch when ws does not
// hold one yet; a missing node is returned as nil.
func readNode(ctx context.Context, s *Session, ws *watchSet, p string) (*nodeData, error) {
	k := watchKey{watchNode, p}
	if ws.isArmed(k) {
		return getIfAny(ctx, s, p)
	}
	ws.prepare(k)
	nd, err := getW(ctx, s, p)
	if err != nil {
		ws.cancel(k)
		return nil, err
	}
	ws.armed(k)
	return nd, nil
}

// getW reads node p and arms a data watch on it, or an existence watch
// when it is missing (then nil, nil). The caller has prepared the watch's
// key in its watchSet.
func getW(ctx context.Context, s *Session, p string) (*nodeData, error) {
	return bounded(ctx, s, func(c zkConn) (*nodeData, error) {
		data, stat, _, err := c.GetW(p)
		if err == nil {
			return &nodeData{data, *stat}, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return nil, err
		}
		exists, _, _, err := c.ExistsW(p)
		if err != nil || !exists {
			return nil, err
		}
		// Created in between: ExistsW armed a data watch; read the data
		// without arming another one.
		data, stat, err = c.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return &nodeData{data, *stat}, nil
	})
}

// read fills the cache once, without watches.
func (d *dirCache) read(ctx context.Context, s *Session) error {
	names, err := children(ctx, s, d.dir)
	if err != nil {
		return err
	}
	type read struct {
		nd  nodeData
		err error
	}
	reads := parallelMap(ctx, names, func(n string) read {
		nd, err := getNode(ctx, s, d.dir+"/"+n)
		return read{nd, err}
	})
	for i, r := range reads {
		if errors.Is(r.err, zk.ErrNoNode) {
			continue
		}
		if r.err != nil {
			return r.err
		}
		d.nodes[names[i]] = r.nd
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

// listW lists dir's children and arms ws's children watch on it: the watch
// is armed when the listing succeeded, cancelled when it did not.
func listW(ctx context.Context, s *Session, ws *watchSet, dir string) ([]string, error) {
	ck := watchKey{watchChildren, dir}
	ws.prepare(ck)
	names, err := bounded(ctx, s, func(c zkConn) ([]string, error) {
		names, _, _, err := c.ChildrenW(dir)
		return names, err
	})
	if err != nil {
		ws.cancel(ck)
		return nil, err
	}
	ws.armed(ck)
	return names, nil
}
