package testenv

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RedisServer is a Redis server for tests. Servers from the environment or
// Docker cannot be stopped or paused: the fault helpers fail the test there.
type RedisServer struct {
	Addr string // host:port
	p    *process
}

// RedisOptions configures a private Redis server.
type RedisOptions struct {
	AppendOnly bool // appendonly yes (appendfsync everysec unless FsyncAlways)
	// FsyncAlways sets appendfsync always, so that even kill -9 loses nothing.
	FsyncAlways bool
}

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
		s, err := startRedis(dir, RedisOptions{})
		if err != nil && isNotInstalled(err) {
			if addr, derr := dockerRedis(); derr == nil {
				return &RedisServer{Addr: addr}, nil
			}
		}
		return s, err
	})
}

// NewRedis starts a private Redis server for this test, stopped when the test
// ends.
func NewRedis(t testing.TB, o RedisOptions) *RedisServer {
	t.Helper()
	s, err := startRedis(t.TempDir(), o)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { s.p.kill() })
	return s
}

func startRedis(dir string, o RedisOptions) (*RedisServer, error) {
	bin, err := lookBinary("redis-server", "/usr/bin/redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, redisHint)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return launchRedis(bin, dir, port, o, nil)
}

func launchRedis(bin, dir string, port int, o RedisOptions, extra []string) (*RedisServer, error) {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	aof, fsync := "no", "everysec"
	if o.AppendOnly {
		aof = "yes"
	}
	if o.FsyncAlways {
		fsync = "always"
	}
	argv := []string{bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", aof, "--appendfsync", fsync,
		"--protected-mode", "no", "--daemonize", "no", "--loglevel", "warning",
	}
	argv = append(argv, extra...)
	p := &process{
		name: "redis " + addr, argv: argv, dir: dir, logPath: join(dir, "redis.log"),
		ready: func() error {
			r, err := ask(addr, "PING\r\n", time.Second)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(r, "+PONG") {
				return fmt.Errorf("PING answered %q", r)
			}
			return nil
		},
	}
	if err := p.start(); err != nil {
		return nil, err
	}
	track(p)
	return &RedisServer{Addr: addr, p: p}, nil
}

func (s *RedisServer) proc(t testing.TB) *process {
	t.Helper()
	if s.p == nil {
		t.Fatalf("testenv: redis %s was not started by testenv (environment or Docker): use NewRedis for fault tests", s.Addr)
	}
	return s.p
}

// Stop shuts the server down (SIGTERM: an append-only file is flushed).
func (s *RedisServer) Stop(t testing.TB) { t.Helper(); s.proc(t).stop() }

// Kill kills the server with SIGKILL.
func (s *RedisServer) Kill(t testing.TB) { t.Helper(); s.proc(t).kill() }

// Start starts a stopped server again on the same port and data directory.
func (s *RedisServer) Start(t testing.TB) {
	t.Helper()
	if err := s.proc(t).start(); err != nil {
		t.Fatalf("testenv: restart: %v", err)
	}
}

// Pause freezes the server with SIGSTOP.
func (s *RedisServer) Pause(t testing.TB) {
	t.Helper()
	if err := s.proc(t).signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("testenv: %v", err)
	}
}

// Resume thaws a paused server with SIGCONT.
func (s *RedisServer) Resume(t testing.TB) {
	t.Helper()
	if err := s.proc(t).signal(syscall.SIGCONT); err != nil {
		t.Fatalf("testenv: %v", err)
	}
}

// Cluster is a Redis Cluster of three masters without replicas.
type Cluster struct {
	Addrs []string
	Nodes []*RedisServer // nil for a cluster from the environment
}

var sharedCluster shared[*Cluster]

// RedisCluster returns the 3-master Redis Cluster shared by the tests of this
// binary.
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
		return startRedisCluster(dir)
	})
}

func startRedisCluster(dir string) (*Cluster, error) {
	bin, err := lookBinary("redis-server", "/usr/bin/redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, redisHint)
	}
	cli, err := lookBinary("redis-cli", "/usr/bin/redis-cli")
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, redisHint)
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	for i, port := range ports {
		nodeDir := join(dir, strconv.Itoa(i))
		if err := mkdir(nodeDir); err != nil {
			return nil, err
		}
		s, err := launchRedis(bin, nodeDir, port, RedisOptions{}, []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000",
		})
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %w: %s", err, out)
	}
	// Wait until every node agrees the cluster is up.
	deadline := time.Now().Add(startTimeout)
	for _, a := range c.Addrs {
		host, port, _ := strings.Cut(a, ":")
		for {
			out, _ := exec.Command(cli, "-h", host, "-p", port, "cluster", "info").Output()
			if strings.Contains(string(out), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("redis cluster at %s not ok after %s: %s", a, startTimeout, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return c, nil
}
