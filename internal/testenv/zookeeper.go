package testenv

import (
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/localserver"
)

// ZKServer is one ZooKeeper server for tests (standalone or an ensemble
// member).
type ZKServer struct {
	Addr  string   // this server's client address
	Addrs []string // the addresses a client should use (one for standalone)
	p     *localserver.Process
}

// Ensemble is a 3-node ZooKeeper ensemble.
type Ensemble struct {
	Addrs []string
	Nodes []*ZKServer // nil for an ensemble from the environment
}

var (
	sharedZK       shared[*ZKServer]
	sharedEnsemble shared[*Ensemble]
)

// ZooKeeper returns the standalone ZooKeeper server shared by the tests of
// this binary.
func ZooKeeper(t testing.TB) *ZKServer {
	t.Helper()
	return sharedZK.get(t, func() (*ZKServer, error) {
		if a := envAddrs("DROVER_TEST_ZK"); len(a) > 0 {
			return &ZKServer{Addr: a[0], Addrs: a}, nil
		}
		dir, err := tempDir("zk")
		if err != nil {
			return nil, err
		}
		s, err := localserver.StartZooKeeper(dir, 0)
		if err != nil {
			if isNotInstalled(err) {
				if addr, derr := dockerZooKeeper(); derr == nil {
					return &ZKServer{Addr: addr, Addrs: []string{addr}}, nil
				}
			}
			return nil, err
		}
		return &ZKServer{Addr: s.Addr, Addrs: s.Addrs, p: s.Process}, nil
	})
}

// NewZooKeeper starts a private standalone ZooKeeper for this test, stopped
// when the test ends.
func NewZooKeeper(t testing.TB) *ZKServer {
	t.Helper()
	s, err := localserver.StartZooKeeper(t.TempDir(), 0)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(s.Kill)
	return &ZKServer{Addr: s.Addr, Addrs: s.Addrs, p: s.Process}
}

func wrapEnsemble(e *localserver.Ensemble) *Ensemble {
	out := &Ensemble{Addrs: e.Addrs}
	for _, n := range e.Nodes {
		out.Nodes = append(out.Nodes, &ZKServer{Addr: n.Addr, Addrs: e.Addrs, p: n.Process})
	}
	return out
}

// ZKEnsemble returns the 3-node ensemble shared by the tests of this binary.
// Do not stop or pause its nodes: use NewZKEnsemble for that.
func ZKEnsemble(t testing.TB) *Ensemble {
	t.Helper()
	return sharedEnsemble.get(t, func() (*Ensemble, error) {
		if a := envAddrs("DROVER_TEST_ZK_ENSEMBLE"); len(a) > 0 {
			return &Ensemble{Addrs: a}, nil
		}
		dir, err := tempDir("zk-ensemble")
		if err != nil {
			return nil, err
		}
		e, err := localserver.StartEnsemble(dir)
		if err != nil {
			return nil, err
		}
		return wrapEnsemble(e), nil
	})
}

// NewZKEnsemble starts a private 3-node ensemble for this test, stopped when
// the test ends.
func NewZKEnsemble(t testing.TB) *Ensemble {
	t.Helper()
	e, err := localserver.StartEnsemble(t.TempDir())
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() {
		for _, n := range e.Nodes {
			n.Kill()
		}
	})
	return wrapEnsemble(e)
}

// Leader returns the index in Nodes of the ensemble's current leader.
func (e *Ensemble) Leader() (int, error) {
	return (&localserver.Ensemble{Addrs: e.Addrs}).Leader()
}

// WaitServing waits until every running node serves requests again.
func (e *Ensemble) WaitServing(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(localserver.StartTimeout)
	for _, n := range e.Nodes {
		if n == nil || n.PID() == 0 {
			continue
		}
		for {
			if _, err := localserver.ZKMode(n.Addr); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("testenv: zookeeper %s not serving after %s", n.Addr, localserver.StartTimeout)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func (s *ZKServer) proc(t testing.TB) *localserver.Process {
	t.Helper()
	if s.p == nil {
		t.Fatalf("testenv: zookeeper %s was not started by testenv: use NewZooKeeper or NewZKEnsemble for fault tests", s.Addr)
	}
	return s.p
}

// PID returns the server's process id (0 when stopped or external).
func (s *ZKServer) PID() int {
	if s.p == nil {
		return 0
	}
	return s.p.PID()
}

// Stop shuts the server down with SIGTERM.
func (s *ZKServer) Stop(t testing.TB) { t.Helper(); s.proc(t).Stop() }

// Kill kills the server with SIGKILL.
func (s *ZKServer) Kill(t testing.TB) { t.Helper(); s.proc(t).Kill() }

// Start starts a stopped server again with the same configuration and data,
// and returns once it serves requests.
func (s *ZKServer) Start(t testing.TB) {
	t.Helper()
	if err := s.proc(t).Start(); err != nil {
		t.Fatalf("testenv: restart: %v", err)
	}
}

// Pause freezes the server with SIGSTOP (a hung JVM).
func (s *ZKServer) Pause(t testing.TB) { t.Helper(); signal(t, s.proc(t), syscall.SIGSTOP) }

// Resume thaws a paused server with SIGCONT.
func (s *ZKServer) Resume(t testing.TB) { t.Helper(); signal(t, s.proc(t), syscall.SIGCONT) }
