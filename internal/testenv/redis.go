package testenv

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/drover-dev/drover/internal/localserver"
)

// RedisServer is a Redis server for tests. Servers from the environment or
// Docker cannot be stopped or paused: the fault helpers fail the test there.
type RedisServer struct {
	Addr string // host:port
	p    *localserver.Process
}

// RedisOptions configures a private Redis server.
type RedisOptions = localserver.RedisOptions

var sharedRedis shared[*RedisServer]

// Redis returns the Redis server shared by the tests of this binary.
func Redis(t testing.TB) *RedisServer {
	t.Helper()
	return sharedRedis.get(t, func() (*RedisServer, error) {
		if a := envAddrs("DROVER_TEST_REDIS"); len(a) > 0 {
			return &RedisServer{Addr: a[0]}, nil
		}
		dir, err := tempDir("redis")
		if err != nil {
			return nil, err
		}
		s, err := localserver.StartRedis(dir, RedisOptions{})
		if err != nil {
			if isNotInstalled(err) {
				if addr, derr := dockerRedis(); derr == nil {
					return &RedisServer{Addr: addr}, nil
				}
			}
			return nil, err
		}
		return &RedisServer{Addr: s.Addr, p: s.Process}, nil
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
	return &RedisServer{Addr: s.Addr, p: s.Process}
}

func (s *RedisServer) proc(t testing.TB) *localserver.Process {
	t.Helper()
	if s.p == nil {
		t.Fatalf("testenv: redis %s was not started by testenv (environment or Docker): use NewRedis for fault tests", s.Addr)
	}
	return s.p
}

// Stop shuts the server down (SIGTERM: an append-only file is flushed).
func (s *RedisServer) Stop(t testing.TB) { t.Helper(); s.proc(t).Stop() }

// Kill kills the server with SIGKILL.
func (s *RedisServer) Kill(t testing.TB) { t.Helper(); s.proc(t).Kill() }

// Start starts a stopped server again on the same port and data directory.
func (s *RedisServer) Start(t testing.TB) {
	t.Helper()
	if err := s.proc(t).Start(); err != nil {
		t.Fatalf("testenv: restart: %v", err)
	}
}

// Pause freezes the server with SIGSTOP.
func (s *RedisServer) Pause(t testing.TB) { t.Helper(); signal(t, s.proc(t), syscall.SIGSTOP) }

// Resume thaws a paused server with SIGCONT.
func (s *RedisServer) Resume(t testing.TB) { t.Helper(); signal(t, s.proc(t), syscall.SIGCONT) }

func signal(t testing.TB, p *localserver.Process, sig syscall.Signal) {
	t.Helper()
	if err := p.Signal(sig); err != nil {
		t.Fatalf("testenv: %v", err)
	}
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
	return sharedCluster.get(t, func() (*Cluster, error) {
		if a := envAddrs("DROVER_TEST_REDIS_CLUSTER"); len(a) > 0 {
			return &Cluster{Addrs: a}, nil
		}
		dir, err := tempDir("redis-cluster")
		if err != nil {
			return nil, err
		}
		c, err := localserver.StartRedisCluster(dir)
		if err != nil {
			return nil, fmt.Errorf("redis cluster: %w", err)
		}
		return &Cluster{Addrs: c.Addrs}, nil
	})
}
