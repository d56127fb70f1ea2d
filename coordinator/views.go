package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// ViewParallelism is how many reads Queues.Views keeps in flight. The
// go-zookeeper client pipelines concurrent requests over the session's one
// connection, so a few dozen outstanding reads turn N round trips into about
// N/ViewParallelism latencies while bounding the server's queue.
const ViewParallelism = 128

// QueueView is what an operator's console shows of one queue from
// ZooKeeper: its owner and its committed offset.
type QueueView struct {
	Name string
	// Owned says whether /owners/<queue> exists.
	Owned bool
	// Owner is the member name in /owners/<queue>, "" when not owned or
	// when the owner nodes were not read (Queues.Views without owners).
	Owner string
	// Offset is /offsets/<queue>; zero when the queue was never claimed.
	Offset drover.Offset
	// Err is set when a node could not be decoded; the other fields hold
	// what could be read.
	Err error
}

// Names lists the configured queues, sorted, without reading their
// configurations: one listing of the registry's buckets, then one listing
// per bucket, several in flight.
func (q Queues) Names(ctx context.Context) ([]string, error) {
	s := q.s
	dir := s.path(queuesDir)
	buckets, err := children(ctx, s, dir)
	if err != nil {
		return nil, fmt.Errorf("list queue names: %w", err)
	}
	lists := make([][]string, len(buckets))
	idx := make([]int, len(buckets))
	for i := range idx {
		idx[i] = i
	}
	errs := parallelMap(ctx, idx, func(i int) error {
		names, err := children(ctx, s, dir+"/"+buckets[i])
		if errors.Is(err, zk.ErrNoNode) { // the bucket emptied and went away
			return nil
		}
		lists[i] = names
		return err
	})
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return nil, fmt.Errorf("list queue names: %w", err)
	}
	var names []string
	for _, l := range lists {
		names = append(names, l...)
	}
	sort.Strings(names)
	return names, nil
}

// Views reads the offset node of every queue in queues and, with
// owners, its owner node, with at most ViewParallelism requests in flight.
// Without owners, Owned comes from one listing of /owners and Owner stays
// "" (half the reads: a console lists the assigned member instead). It
// returns one view per queue in the order given; a queue without nodes has
// a zero view. It fails on the first read that fails for another reason
// than a missing node.
func (q Queues) Views(ctx context.Context, queues []string, owners bool) ([]QueueView, error) {
	s := q.s
	views := make([]QueueView, len(queues))
	if !owners {
		owned, err := s.Claims().Owned(ctx)
		if err != nil {
			return nil, err
		}
		for i, q := range queues {
			views[i].Owned = owned[q]
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		next  = make(chan int)
	)
	fail := func(err error) {
		once.Do(func() { first = err; cancel() })
	}
	workers := min(ViewParallelism, len(queues))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := s.readView(ctx, &views[i], queues[i], owners); err != nil {
					fail(err)
				}
			}
		}()
	}
feed:
	for i := range queues {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return nil, fmt.Errorf("read queue views: %w", first)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return views, nil
}

func (s *Session) readView(ctx context.Context, v *QueueView, q string, owners bool) error {
	v.Name = q
	op, err := s.queuePath(ownersDir, q)
	if err != nil {
		return err
	}
	if owners {
		nd, err := getNode(ctx, s, op)
		switch {
		case errors.Is(err, zk.ErrNoNode):
		case err != nil:
			return fmt.Errorf("owner of %s: %w", q, err)
		default:
			var o Owner
			if err := json.Unmarshal(nd.data, &o); err != nil {
				v.Err = fmt.Errorf("decode %s: %w", op, err)
			}
			v.Owned, v.Owner = true, o.Member
		}
	}
	nd, err := getNode(ctx, s, s.path(offsetsDir, q))
	switch {
	case errors.Is(err, zk.ErrNoNode):
	case err != nil:
		return fmt.Errorf("offset of %s: %w", q, err)
	default:
		if err := json.Unmarshal(nd.data, &v.Offset); err != nil {
			v.Err = fmt.Errorf("decode offset of %s: %w", q, err)
		}
	}
	return nil
}
