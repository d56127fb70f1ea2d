package queue

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover/internal/testing/testenv"
)

// largestReply records the most names one command's reply carried.
type largestReply struct {
	mu  sync.Mutex
	max int
}

func (h *largestReply) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *largestReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		n := 0
		switch c := cmd.(type) {
		case *redis.StringSliceCmd:
			n = len(c.Val())
		case *redis.ScanCmd:
			keys, _ := c.Val()
			n = len(keys)
		}
		h.mu.Lock()
		h.max = max(h.max, n)
		h.mu.Unlock()
		return err
	}
}
func (h *largestReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Listing the registry of queues reads it in pages: 25,000 names come
// back each once and sorted, and no reply carries more than a few pages'
// worth. One SMEMBERS sent them all in one reply, which at a million keys
// is 200 MB built while Redis serves nobody else, read under one
// command's timeout (the console's find answered 503 at 100,000 names on
// a busy host).
func TestQueuesListsTheRegistryInPages(t *testing.T) {
	ctx := context.Background()
	rdb, err := NewClient(ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer rdb.Close()
	s := newTestStore(t, rdb, nil)
	const n = 25_000
	want := make([]string, 0, n)
	names := make([]any, 0, n)
	for i := range n {
		want = append(want, fmt.Sprintf("q%06d", i))
		names = append(names, want[i])
	}
	if err := rdb.SAdd(ctx, s.keys.queues(), names...).Err(); err != nil {
		t.Fatalf("SADD: %v", err)
	}
	replies := &largestReply{}
	rdb.AddHook(replies)
	have, err := s.Inspector().Queues(ctx)
	if err != nil {
		t.Fatalf("Queues: %v", err)
	}
	if !slices.Equal(have, want) {
		t.Fatalf("Queues: want the %d names once each, sorted; have %d (first %.80v)", n, len(have), have)
	}
	// SSCAN's COUNT is a hint: a page may hold somewhat more.
	if replies.max > 4*registryPage {
		t.Fatalf("the largest reply held %d names, want at most %d (pages of %d)", replies.max, 4*registryPage, registryPage)
	}
}
