package localserver

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// Install hints, printed when a server is missing.
const (
	RedisHint = "install Redis with `apt-get install -y redis-server` (`make test` and `make demo` do it for you)"
	ZKHint    = "install ZooKeeper with `apt-get install -y zookeeper` (`make test` and `make demo` do it for you)"
)

// StartTimeout bounds how long a server may take to answer after start.
const StartTimeout = 60 * time.Second

var registry = struct {
	sync.Mutex
	procs []*Process
}{}

func track(p *Process) {
	registry.Lock()
	registry.procs = append(registry.procs, p)
	registry.Unlock()
}

// KillAll kills every server this package started in this process. Safe to
// call more than once.
func KillAll() {
	registry.Lock()
	procs := registry.procs
	registry.procs = nil
	registry.Unlock()
	for _, p := range procs {
		p.Kill()
	}
}

func mkdir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}
