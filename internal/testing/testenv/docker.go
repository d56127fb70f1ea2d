package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/drover-dev/drover/internal/localserver"
	"github.com/ory/dockertest/v3"
)

// Docker is the last resort (DESIGN.md §9): used only when the server
// binaries are missing and a Docker engine answers. Containers expire after
// 10 minutes even if the test binary dies.

var docker = struct {
	sync.Mutex
	pool      *dockertest.Pool
	resources []*dockertest.Resource
}{}

var errNoDocker = errors.New("no Docker engine answers")

func dockerPool() (*dockertest.Pool, error) {
	docker.Lock()
	defer docker.Unlock()
	if docker.pool != nil {
		return docker.pool, nil
	}
	if os.Getenv("DOCKER_HOST") == "" {
		if _, err := os.Stat("/var/run/docker.sock"); err != nil {
			return nil, errNoDocker
		}
	}
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoDocker, err)
	}
	if err := pool.Client.Ping(); err != nil {
		return nil, fmt.Errorf("%w: %v", errNoDocker, err)
	}
	pool.MaxWait = localserver.StartTimeout
	docker.pool = pool
	return pool, nil
}

func dockerRun(repo, tag, port string, ready func(addr string) error) (string, error) {
	pool, err := dockerPool()
	if err != nil {
		return "", err
	}
	res, err := pool.Run(repo, tag, nil)
	if err != nil {
		return "", fmt.Errorf("docker run %s:%s: %w", repo, tag, err)
	}
	res.Expire(600)
	docker.Lock()
	docker.resources = append(docker.resources, res)
	docker.Unlock()
	addr := net.JoinHostPort("127.0.0.1", res.GetPort(port))
	if err := pool.Retry(func() error { return ready(addr) }); err != nil {
		return "", fmt.Errorf("%s:%s not ready: %w", repo, tag, err)
	}
	return addr, nil
}

func dockerRedis() (string, error) {
	return dockerRun("redis", "7", "6379/tcp", func(addr string) error {
		return localserver.PingRedis(addr)
	})
}

func dockerZooKeeper() (string, error) {
	return dockerRun("zookeeper", "3.8", "2181/tcp", func(addr string) error {
		_, err := localserver.ZKMode(addr)
		return err
	})
}

// stopDocker removes every container started here.
func stopDocker() {
	docker.Lock()
	defer docker.Unlock()
	for _, r := range docker.resources {
		if docker.pool != nil {
			docker.pool.Purge(r)
		}
	}
	docker.resources = nil
}
