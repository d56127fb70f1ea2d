package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/localserver"
)

// servers are the private Redis and ZooKeeper every benchmark runs against,
// started from the binaries installed on the machine in a temporary
// directory, and killed when the program ends.
type servers struct {
	dir        string
	memoryRuns int // gives every memory run a fresh ZooKeeper root
	redis      *localserver.Redis
	zk         *localserver.ZooKeeper
}

// startServers starts a private redis-server and, when withZK, a standalone
// ZooKeeper with zk's heap and JVM.
func startServers(withZK bool, zk localserver.ZKOptions) (*servers, error) {
	dir, err := os.MkdirTemp("", "drover-bench-")
	if err != nil {
		return nil, fmt.Errorf("create the servers' directory: %w", err)
	}
	s := &servers{dir: dir}
	if err := os.MkdirAll(filepath.Join(dir, "redis"), 0o755); err != nil {
		return nil, err
	}
	if s.redis, err = localserver.StartRedis(filepath.Join(dir, "redis"), localserver.RedisOptions{}); err != nil {
		s.close()
		return nil, fmt.Errorf("start redis: %w", err)
	}
	if withZK {
		if err := os.MkdirAll(filepath.Join(dir, "zk"), 0o755); err != nil {
			return nil, err
		}
		if s.zk, err = localserver.StartZooKeeperWith(filepath.Join(dir, "zk"), zk); err != nil {
			s.close()
			return nil, fmt.Errorf("start zookeeper: %w", err)
		}
	}
	return s, nil
}

func (s *servers) close() {
	localserver.KillAll()
	os.RemoveAll(s.dir)
}

// redisClient returns a client of the private Redis with a pool large enough
// for every workload's concurrency.
func (s *servers) redisClient() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.redis.Addr, PoolSize: 64})
}

// flushRedis empties the private Redis between runs (not timed).
func (s *servers) flushRedis(ctx context.Context) error {
	rdb := redis.NewClient(&redis.Options{Addr: s.redis.Addr})
	defer rdb.Close()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("flush redis: %w", err)
	}
	return nil
}

// connectZK opens a coordinator session under root, through addr when it is
// not empty (a proxy) and to the private server otherwise.
func (s *servers) connectZK(ctx context.Context, root, addr string, timeout time.Duration) (*coordinator.Session, error) {
	if addr == "" {
		addr = s.zk.Addr
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	t0 := time.Now()
	defer func() {
		if debugScale && time.Since(t0) > time.Second {
			fmt.Fprintf(os.Stderr, "    connect took %s\n", time.Since(t0))
		}
	}()
	sess, err := coordinator.Connect(cctx, coordinator.Config{
		Servers: []string{addr}, Root: root, SessionTimeout: timeout,
		Logger: benchLogger,
	})
	if err != nil {
		return nil, fmt.Errorf("connect to zookeeper at %s under %s: %w", addr, root, err)
	}
	return sess, nil
}

// redisCPU returns the private Redis server's CPU time so far (INFO cpu:
// used_cpu_sys + used_cpu_user).
func (s *servers) redisCPU(ctx context.Context) (time.Duration, error) {
	rdb := redis.NewClient(&redis.Options{Addr: s.redis.Addr})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO cpu: %w", err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("INFO cpu: %s: %w", k, err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second)), nil
}
