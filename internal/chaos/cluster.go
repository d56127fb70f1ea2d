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
	redis    *localserver.Redis
	zk       *zkClient
	store    *queue.Store
	// churnStore is the key-churn producer: churnDedupeWindow, not 24 h.
	churnStore *queue.Store
	rdb        io.Closer
}

// startCluster starts a 3-node ZooKeeper ensemble and Redis (appendonly,
// fsync always: a restart or kill -9 loses nothing) under dir and connects
// to both. The servers die with this process (Pdeathsig); close stops them
// at once.
func startCluster(ctx context.Context, dir string) (*cluster, error) {
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
	go func() {
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
	if err := errors.Join(z.err, r.err); err != nil {
		c.close()
		return nil, fmt.Errorf("start servers: %w", err)
	}
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{c.redis.Addr}})
	if err != nil {
		c.close()
		return nil, fmt.Errorf("redis client: %w", err)
	}
	c.rdb = rdb
	if c.store, err = queue.New(queue.Config{Client: rdb, Prefix: redisPrefix}); err != nil {
		c.close()
		return nil, fmt.Errorf("queue store: %w", err)
	}
	if c.churnStore, err = queue.New(queue.Config{Client: rdb, Prefix: redisPrefix, DedupeWindow: churnDedupeWindow}); err != nil {
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

func (c *cluster) close() {
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
