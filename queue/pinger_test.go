package queue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/testing/testenv"
)

// TestPingerAnswersWhileTheStoresPoolIsBusy: a member's health ping asks
// whether Redis answers, not whether the Store has a free connection. With
// every connection of the Store's pool held (here by a BLPOP that waits for
// ever; in the fleet bench, by 900 to 2,700 queued requests), the Store's
// Ping cannot even be sent, and says so; the Pinger's own connection
// answers. The health ping went through the Store's pool before.
func TestPingerAnswersWhileTheStoresPoolIsBusy(t *testing.T) {
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	opts := ClientOptions{Addrs: []string{srv.Addr}, PoolSize: 1, ClientName: "pool-test"}
	rdb := testClient(t, opts)
	s := newTestStore(t, rdb, nil)
	ctx := context.Background()

	key := testenv.Prefix(t) + ":never-pushed"
	held := make(chan error, 1)
	go func() { held <- rdb.BLPop(ctx, 0, key).Err() }()
	// The BLPOP holds the pool's one connection once Redis sees it blocked.
	other := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	for {
		n, err := other.Info(ctx, "clients").Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(n, "blocked_clients:1") {
			break
		}
	}

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := s.Ping(short)
	cancel()
	if err == nil {
		t.Fatal("the Store's Ping answered with its pool's one connection held")
	}
	if !strings.Contains(err.Error(), "requests waiting") {
		t.Errorf("the Store's Ping error does not say how the pool stood: %v", err)
	}

	p, err := NewPinger(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	long, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.Ping(long); err != nil {
		t.Fatalf("the Pinger did not answer beside a busy pool: %v", err)
	}
	// Its connection is its own, and named after the Store's.
	list, err := other.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(list, "name=pool-test-health") {
		t.Errorf("no connection named pool-test-health in CLIENT LIST:\n%s", list)
	}

	if err := other.RPush(ctx, key, "x").Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-held; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
