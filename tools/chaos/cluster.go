package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/localserver"
	"github.com/drover-dev/drover/queue"
)

// Where the run keeps its state in ZooKeeper and Redis (private servers).
const (
	zkRoot      = "/drover/chaos"
	redisPrefix = "chaos"
)

// cluster is a run's servers and the harness's own clients.
type cluster struct {
	ensemble *localserver.Ensemble
	// redis is the standalone server; in a run with the sentinel kind,
	// sentinel is the deployment instead and redis is nil.
	redis    *localserver.Redis
	sentinel *sentinelSet
	zk       *zkClient
	store    *queue.Store
	// churnStore is the key-churn producer: churnDedupeWindow, not 24 h.
	churnStore *queue.Store
	rdb        io.Closer
}

// startCluster starts a 3-node ZooKeeper ensemble and Redis (appendonly,
// fsync always: a restart or kill -9 loses nothing) under dir and connects
// to both. With sentinel, Redis is a Sentinel deployment (sentinel.go) and
// durable sets the producers' durable enqueue mode. The servers die with
// this process (Pdeathsig); close stops them at once.
func startCluster(ctx context.Context, dir string, sentinel, durable bool) (*cluster, error) {
	c := &cluster{}
	type started struct {
		e   *localserver.Ensemble
		r   *localserver.Redis
		err error
	}
	zkc, rc := make(chan started, 1), make(chan started, 1)
	go func() {
		e, err := localserver.StartEnsemble(filepath.Join(dir, "zookeeper"))
		zkc <- started{e: e, err: err}
	}()
	var sc chan error
	if sentinel {
		sc = make(chan error, 1)
		go func() {
			var err error
			c.sentinel, err = startSentinelSet(ctx, dir)
			sc <- err
		}()
	}
	go func() {
		if sentinel {
			rc <- started{}
			return
		}
		rdir := filepath.Join(dir, "redis")
		if err := os.MkdirAll(rdir, 0o755); err != nil {
			rc <- started{err: err}
			return
		}
		r, err := localserver.StartRedis(rdir, localserver.RedisOptions{AppendOnly: true, FsyncAlways: true})
		rc <- started{r: r, err: err}
	}()
	z, r := <-zkc, <-rc
	c.ensemble, c.redis = z.e, r.r
	err := errors.Join(z.err, r.err)
	if sc != nil {
		err = errors.Join(err, <-sc)
	}
	if err != nil {
		c.close()
		return nil, fmt.Errorf("start servers: %w", err)
	}
	copts := queue.ClientOptions{Addrs: []string{c.redisAddr()}}
	var dur queue.Durable
	if sentinel {
		copts = queue.ClientOptions{Addrs: c.sentinel.addrs(), MasterName: sentinelMaster}
		if durable {
			dur = queue.Durable{Replicas: durableReplicas, Timeout: durableTimeout}
		}
	}
	rdb, err := queue.NewClient(copts)
	if err != nil {
		c.close()
		return nil, fmt.Errorf("redis client: %w", err)
	}
	c.rdb = rdb
	if c.store, err = queue.New(queue.Config{Client: rdb, Prefix: redisPrefix, Durable: dur}); err != nil {
		c.close()
		return nil, fmt.Errorf("queue store: %w", err)
	}
	if c.churnStore, err = queue.New(queue.Config{Client: rdb, Prefix: redisPrefix, DedupeWindow: churnDedupeWindow, Durable: dur}); err != nil {
		c.close()
		return nil, fmt.Errorf("churn producer: %w", err)
	}
	c.zk = &zkClient{servers: c.ensemble.Addrs}
	if _, err := c.zk.session(ctx); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// The durable mode of a Sentinel run (on): the defaults of redis.durable.
const (
	durableReplicas = 1
	durableTimeout  = 500 * time.Millisecond
)

// redisAddr is where the workers' proxies point at the start: the
// standalone server or the first master.
func (c *cluster) redisAddr() string {
	if c.sentinel != nil {
		return c.sentinel.current()
	}
	return c.redis.Addr
}

// masterServer is the Redis server that is the master now.
func (c *cluster) masterServer() *localserver.Redis {
	if c.sentinel != nil {
		return c.sentinel.server(c.sentinel.current())
	}
	return c.redis
}

func (c *cluster) close() {
	if c.sentinel != nil {
		c.sentinel.close()
	}
	if c.zk != nil {
		c.zk.close()
	}
	if c.rdb != nil {
		c.rdb.Close()
	}
	localserver.KillAll()
}

// zkClient is the harness's own ZooKeeper session, connected straight to
// the ensemble (never through a worker's proxy) and replaced when a fault
// costs it its session.
type zkClient struct {
	servers []string
	mu      sync.Mutex
	s       *coordinator.Session
}

// harnessSessionTimeout is longer than the workers' so that the harness
// usually rides out the faults it injects.
const harnessSessionTimeout = 15 * time.Second

// session returns a live session, connecting a new one when needed.
func (z *zkClient) session(ctx context.Context) (*coordinator.Session, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.s != nil && z.s.Err() == nil {
		return z.s, nil
	}
	if z.s != nil {
		z.s.Close()
		z.s = nil
	}
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: z.servers, Root: zkRoot, SessionTimeout: harnessSessionTimeout})
	if err != nil {
		return nil, fmt.Errorf("connect to zookeeper: %w", err)
	}
	z.s = s
	return s, nil
}

func (z *zkClient) close() {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.s != nil {
		z.s.Close()
		z.s = nil
	}
}
