package testenv

import (
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/localserver"
)

// ZKServer is one ZooKeeper server for tests (standalone or an ensemble
// member).
type ZKServer struct {
	Addr  string   // this server's client address
	Addrs []string // the addresses a client should use (one for standalone)
	faults
}

func newZKServer(addr string, addrs []string, p *localserver.Process) *ZKServer {
	return &ZKServer{Addr: addr, Addrs: addrs, faults: faults{p: p, what: "zookeeper " + addr, use: "NewZooKeeper or NewZKEnsemble"}}
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
	return sharedZK.get(t, "DROVER_TEST_ZK", "zk",
		func(a []string) *ZKServer { return newZKServer(a[0], a, nil) },
		func(dir string) (*ZKServer, error) {
			s, err := localserver.StartZooKeeper(dir, 0)
			if err != nil {
				if isNotInstalled(err) {
					if addr, derr := dockerZooKeeper(); derr == nil {
						return newZKServer(addr, []string{addr}, nil), nil
					}
				}
				return nil, err
			}
			return newZKServer(s.Addr, s.Addrs, s.Process), nil
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
	return newZKServer(s.Addr, s.Addrs, s.Process)
}

func wrapEnsemble(e *localserver.Ensemble) *Ensemble {
	out := &Ensemble{Addrs: e.Addrs}
	for _, n := range e.Nodes {
		out.Nodes = append(out.Nodes, newZKServer(n.Addr, e.Addrs, n.Process))
	}
	return out
}

// ZKEnsemble returns the 3-node ensemble shared by the tests of this binary.
// Do not stop or pause its nodes: use NewZKEnsemble for that.
func ZKEnsemble(t testing.TB) *Ensemble {
	t.Helper()
	return sharedEnsemble.get(t, "DROVER_TEST_ZK_ENSEMBLE", "zk-ensemble",
		func(a []string) *Ensemble { return &Ensemble{Addrs: a} },
		func(dir string) (*Ensemble, error) {
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
