package queue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

// NewClient with MasterName finds the master through a Sentinel, and the
// Store works through it.
func TestNewClientThroughSentinel(t *testing.T) {
	ctx := context.Background()
	master := testenv.NewRedis(t, testenv.RedisOptions{})
	sentinel := startSentinel(t, "drover-test", master.Addr)

	rdb := testClient(t, ClientOptions{Addrs: []string{sentinel}, MasterName: "drover-test"})
	s := newTestStore(t, rdb, nil)
	r := mustEnqueue(t, s, msg("via-sentinel", ""))
	es := readAll(t, s, "via-sentinel", 0, 10)
	if len(es) != 1 || es[0].ID != r.ID {
		t.Fatalf("through the Sentinel: want %s back, have %+v", r.ID, es)
	}
	direct := testClient(t, ClientOptions{Addrs: []string{master.Addr}})
	if n, err := direct.Exists(ctx, s.keys.queue("via-sentinel").log).Result(); err != nil || n != 1 {
		t.Fatalf("the master %s should hold the queue's log: EXISTS = %d, %v", master.Addr, n, err)
	}
}

// startSentinel runs a Sentinel (redis-server --sentinel) monitoring the
// master at addr under name, stopped when the test ends, and returns its
// address once it knows the master.
func startSentinel(t *testing.T, name, addr string, extra ...string) string {
	t.Helper()
	sentinelAddr, port := freeLoopbackPort(t)
	host, mport, _ := strings.Cut(addr, ":")
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor %s %s %s 1\n", port, dir, name, host, mport)
	for _, line := range extra {
		text += line + "\n"
	}
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := redis.NewSentinelClient(&redis.Options{Addr: sentinelAddr})
	defer probe.Close()
	runRedisServer(t, []string{conf, "--sentinel"}, func() bool {
		got, err := probe.GetMasterAddrByName(context.Background(), name).Result()
		return err == nil && len(got) == 2 && got[1] == mport
	})
	return sentinelAddr
}
