package testenv

import (
	"fmt"
	"testing"

	"github.com/drover-dev/drover/internal/localserver"
)

// RedisServer is a Redis server for tests. Servers from the environment or
// Docker cannot be stopped or paused: the fault helpers fail the test there.
type RedisServer struct {
	Addr string // host:port
	faults
}

func newRedisServer(addr string, p *localserver.Process) *RedisServer {
	return &RedisServer{Addr: addr, faults: faults{p: p, what: "redis " + addr, use: "NewRedis"}}
}

// RedisOptions configures a private Redis server.
type RedisOptions = localserver.RedisOptions

var sharedRedis shared[*RedisServer]

// Redis returns the Redis server shared by the tests of this binary.
func Redis(t testing.TB) *RedisServer {
	t.Helper()
	return sharedRedis.get(t, "DROVER_TEST_REDIS", "redis",
		func(a []string) *RedisServer { return newRedisServer(a[0], nil) },
		func(dir string) (*RedisServer, error) {
			s, err := localserver.StartRedis(dir, RedisOptions{})
			if err != nil {
				if isNotInstalled(err) {
					if addr, derr := dockerRedis(); derr == nil {
						return newRedisServer(addr, nil), nil
					}
				}
				return nil, err
			}
			return newRedisServer(s.Addr, s.Process), nil
		})
}

// NewRedis starts a private Redis server for this test, stopped when the test
// ends.
func NewRedis(t testing.TB, o RedisOptions) *RedisServer {
	t.Helper()
	s, err := localserver.StartRedis(t.TempDir(), o)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(s.Kill)
	return newRedisServer(s.Addr, s.Process)
}

// Cluster is a Redis Cluster of three masters without replicas.
type Cluster struct {
	Addrs []string
}

var sharedCluster shared[*Cluster]

// RedisCluster returns the 3-master Redis Cluster shared by the tests of
// this binary.
func RedisCluster(t testing.TB) *Cluster {
	t.Helper()
	return sharedCluster.get(t, "DROVER_TEST_REDIS_CLUSTER", "redis-cluster",
		func(a []string) *Cluster { return &Cluster{Addrs: a} },
		func(dir string) (*Cluster, error) {
			c, err := localserver.StartRedisCluster(dir)
			if err != nil {
				return nil, fmt.Errorf("redis cluster: %w", err)
			}
			return &Cluster{Addrs: c.Addrs}, nil
		})
}

// ReplicatedCluster is a private Redis Cluster of three masters with one
// replica each. Nodes are its six servers (fault helpers included); which
// is a master changes with failovers: ask the cluster (CLUSTER NODES).
type ReplicatedCluster struct {
	Addrs []string
	Nodes []*RedisServer
}

// NewRedisClusterWithReplicas starts a private Redis Cluster of three
// masters with one replica each for this test, stopped when the test ends.
func NewRedisClusterWithReplicas(t testing.TB) *ReplicatedCluster {
	t.Helper()
	c, err := localserver.StartRedisClusterWithReplicas(t.TempDir())
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	rc := &ReplicatedCluster{Addrs: c.Addrs}
	for _, n := range c.Nodes {
		t.Cleanup(n.Kill)
		rc.Nodes = append(rc.Nodes, newRedisServer(n.Addr, n.Process))
	}
	return rc
}
