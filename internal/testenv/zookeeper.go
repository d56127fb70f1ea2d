package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ZooKeeper server settings for tests. tickTime 500 ms allows session
// timeouts from 1 s (2 ticks) up to 60 s, and lets an ensemble notice a dead
// leader within a few seconds.
const (
	zkTickMillis          = 500
	zkMinSessionTimeoutMs = 1000
	zkMaxSessionTimeoutMs = 60000
)

// ZKServer is one ZooKeeper server for tests (standalone or an ensemble
// member).
type ZKServer struct {
	Addr  string   // this server's client address
	Addrs []string // the addresses a client should use (one for standalone)
	p     *process
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
		s, err := startZK(dir)
		if err != nil && isNotInstalled(err) {
			if addr, derr := dockerZooKeeper(); derr == nil {
				return &ZKServer{Addr: addr, Addrs: []string{addr}}, nil
			}
		}
		return s, err
	})
}

// NewZooKeeper starts a private standalone ZooKeeper for this test, stopped
// when the test ends.
func NewZooKeeper(t testing.TB) *ZKServer {
	t.Helper()
	s, err := startZK(t.TempDir())
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { s.p.kill() })
	return s
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
		return startEnsemble(dir)
	})
}

// NewZKEnsemble starts a private 3-node ensemble for this test, stopped when
// the test ends.
func NewZKEnsemble(t testing.TB) *Ensemble {
	t.Helper()
	e, err := startEnsemble(t.TempDir())
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() {
		for _, n := range e.Nodes {
			n.p.kill()
		}
	})
	return e
}

// zkJava returns the java binary and the class path of Debian's zookeeper
// package.
func zkJava() (java, classpath string, err error) {
	java, err = lookBinary("java", "/usr/bin/java")
	if err != nil {
		return "", "", fmt.Errorf("%w; ZooKeeper needs Java: apt-get install -y default-jre-headless zookeeper", err)
	}
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		return "", "", fmt.Errorf("zookeeper: %w; %s", errNotInstalled, zkHint)
	}
	return java, "/usr/share/zookeeper/*:/usr/share/java/*", nil
}

func startZK(dir string) (*ZKServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s, err := launchZK(dir, port, nil, 0)
	if err != nil {
		return nil, err
	}
	s.Addrs = []string{s.Addr}
	return s, nil
}

func startEnsemble(dir string) (*Ensemble, error) {
	ports, err := freePorts(9)
	if err != nil {
		return nil, err
	}
	var servers []string
	for i := 0; i < 3; i++ {
		servers = append(servers, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i+1, ports[3+i], ports[6+i]))
	}
	e := &Ensemble{}
	for i := 0; i < 3; i++ {
		e.Addrs = append(e.Addrs, "127.0.0.1:"+strconv.Itoa(ports[i]))
	}
	// Start the three JVMs at once: none is ready before a quorum exists.
	type started struct {
		i   int
		s   *ZKServer
		err error
	}
	ch := make(chan started, 3)
	for i := 0; i < 3; i++ {
		go func(i int) {
			nodeDir := join(dir, strconv.Itoa(i+1))
			if err := mkdir(nodeDir); err != nil {
				ch <- started{i: i, err: err}
				return
			}
			s, err := launchZK(nodeDir, ports[i], servers, i+1)
			ch <- started{i, s, err}
		}(i)
	}
	e.Nodes = make([]*ZKServer, 3)
	var firstErr error
	for i := 0; i < 3; i++ {
		r := <-ch
		if r.err != nil && firstErr == nil {
			firstErr = r.err
		}
		if r.s != nil {
			r.s.Addrs = e.Addrs
			e.Nodes[r.i] = r.s
		}
	}
	if firstErr != nil {
		for _, n := range e.Nodes {
			if n != nil {
				n.p.kill()
			}
		}
		return nil, firstErr
	}
	return e, nil
}

// launchZK writes zoo.cfg into dir and starts one server. servers and myid
// are empty for a standalone server.
func launchZK(dir string, port int, servers []string, myid int) (*ZKServer, error) {
	java, cp, err := zkJava()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cfg := []string{
		"tickTime=" + strconv.Itoa(zkTickMillis),
		"initLimit=20",
		"syncLimit=4",
		"dataDir=" + join(dir, "data"),
		"clientPort=" + strconv.Itoa(port),
		"clientPortAddress=127.0.0.1",
		"admin.enableServer=false",
		"4lw.commands.whitelist=ruok,srvr,mntr,stat,cons",
		"minSessionTimeout=" + strconv.Itoa(zkMinSessionTimeoutMs),
		"maxSessionTimeout=" + strconv.Itoa(zkMaxSessionTimeoutMs),
		"maxClientCnxns=0",
		"autopurge.purgeInterval=0",
	}
	cfg = append(cfg, servers...)
	if err := mkdir(join(dir, "data")); err != nil {
		return nil, err
	}
	if myid > 0 {
		if err := os.WriteFile(join(dir, "data/myid"), []byte(strconv.Itoa(myid)+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("write myid: %w", err)
		}
	}
	cfgPath := join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(strings.Join(cfg, "\n")+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write zoo.cfg: %w", err)
	}
	argv := []string{java,
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k",
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-cp", cp, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath,
	}
	p := &process{
		name: "zookeeper " + addr, argv: argv, dir: dir, logPath: join(dir, "zookeeper.log"),
		ready: func() error { _, err := zkMode(addr); return err },
	}
	if err := p.start(); err != nil {
		return nil, err
	}
	track(p)
	return &ZKServer{Addr: addr, p: p}, nil
}

// zkMode asks a server for its mode (standalone, leader, follower). It fails
// while the server does not serve requests (no quorum).
func zkMode(addr string) (string, error) {
	r, err := ask(addr, "srvr", 2*time.Second)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(r, "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("not serving: %q", strings.TrimSpace(r))
}

// Leader returns the index in Nodes of the ensemble's current leader.
func (e *Ensemble) Leader() (int, error) {
	for i, a := range e.Addrs {
		if m, err := zkMode(a); err == nil && m == "leader" {
			return i, nil
		}
	}
	return -1, fmt.Errorf("no ZooKeeper node reports Mode: leader")
}

// WaitServing waits until every running node serves requests again.
func (e *Ensemble) WaitServing(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for _, n := range e.Nodes {
		if n == nil || n.p == nil || n.p.pid() == 0 {
			continue
		}
		for {
			if _, err := zkMode(n.Addr); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("testenv: zookeeper %s not serving after %s", n.Addr, startTimeout)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func (s *ZKServer) proc(t testing.TB) *process {
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
	return s.p.pid()
}

// Stop shuts the server down with SIGTERM.
func (s *ZKServer) Stop(t testing.TB) { t.Helper(); s.proc(t).stop() }

// Kill kills the server with SIGKILL.
func (s *ZKServer) Kill(t testing.TB) { t.Helper(); s.proc(t).kill() }

// Start starts a stopped server again with the same configuration and data.
// For an ensemble member it returns once the node serves requests.
func (s *ZKServer) Start(t testing.TB) {
	t.Helper()
	if err := s.proc(t).start(); err != nil {
		t.Fatalf("testenv: restart: %v", err)
	}
}

// Pause freezes the server with SIGSTOP (a hung JVM).
func (s *ZKServer) Pause(t testing.TB) {
	t.Helper()
	if err := s.proc(t).signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("testenv: %v", err)
	}
}

// Resume thaws a paused server with SIGCONT.
func (s *ZKServer) Resume(t testing.TB) {
	t.Helper()
	if err := s.proc(t).signal(syscall.SIGCONT); err != nil {
		t.Fatalf("testenv: %v", err)
	}
}
