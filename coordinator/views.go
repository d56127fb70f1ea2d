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

// ViewParallelism is how many reads ReadQueueViews keeps in flight. The
// go-zookeeper client pipelines concurrent requests over the session's one
// connection, so a few dozen outstanding reads turn N round trips into about
// N/ViewParallelism latencies while bounding the server's queue.
const ViewParallelism = 64

// QueueView is what an operator's console shows of one queue from
// ZooKeeper: its owner and its committed offset.
type QueueView struct {
	Name string
	// Owner is the member name in /owners/<queue>, "" when not owned.
	Owner string
	// Offset is /offsets/<queue>; zero when the queue was never claimed.
	Offset drover.Offset
	// Err is set when a node could not be decoded; the other fields hold
	// what could be read.
	Err error
}

// QueueNames lists the configured queues (the children of /queues), sorted,
// without reading their configurations: one request.
func (s *Session) QueueNames(ctx context.Context) ([]string, error) {
	names, err := bounded(ctx, s, func(c zkConn) ([]string, error) {
		names, _, err := c.Children(s.path(queuesDir))
		return names, err
	})
	if err != nil {
		return nil, fmt.Errorf("list queue names: %w", err)
	}
	sort.Strings(names)
	return names, nil
}

// ReadQueueViews reads the owner and offset nodes of every queue in queues,
// with at most ViewParallelism requests in flight. It returns one view per
// queue in the order given; a queue without nodes has a zero view. It fails
// on the first read that fails for another reason than a missing node.
func (s *Session) ReadQueueViews(ctx context.Context, queues []string) ([]QueueView, error) {
	views := make([]QueueView, len(queues))
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
				if err := s.readView(ctx, &views[i], queues[i]); err != nil {
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

func (s *Session) readView(ctx context.Context, v *QueueView, q string) error {
	v.Name = q
	op, err := s.queuePath(ownersDir, q)
	if err != nil {
		return err
	}
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
		v.Owner = o.Member
	}
	nd, err = getNode(ctx, s, s.path(offsetsDir, q))
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
