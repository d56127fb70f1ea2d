package localserver

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ZooKeeper server settings. tickTime 500 ms allows session timeouts from 1 s
// (2 ticks) up to 60 s, and lets an ensemble notice a dead leader within a
// few seconds.
const (
	zkTickMillis          = 500
	zkMinSessionTimeoutMs = 1000
	zkMaxSessionTimeoutMs = 60000
)

// ZooKeeper's JVM. The heap holds the whole data tree and every watch
// (DefaultZKHeap is a cap: an idle server touches far less). At 100 members
// × 100,000 queues the tree has about 300,000 znodes (a config, an offset and
// an owner per queue) and about 200,000 watches (the rebalance leader's on
// every config, each member's on its own): some 300 MB live. The former cap
// of 256 MB left the serial collector running full collections back to
// back, and the server stopped answering (no new sessions). 1 GB leaves
// room for that tree three times over; a run at a million queues asks for
// more with ZKOptions.Heap.
//
// The other limits stay at ZooKeeper's defaults on purpose: jute.maxbuffer
// (1 MB, the largest request or response; Drover keeps every one under
// 512 KB, and the tests must catch one that is not) and
// globalOutstandingLimit (1,000 requests in flight, after which the server
// stops reading connections: the coordinator bounds its own requests in
// flight instead). maxClientCnxns is 0 (no limit per address): every member
// of a test fleet connects from 127.0.0.1.
const DefaultZKHeap = "1g"

// ZKOptions configures a private ZooKeeper server.
type ZKOptions struct {
	// Port to listen on; 0 picks a free one.
	Port int
	// Heap is the JVM's maximum heap (-Xmx), for example "4g". Default
	// DefaultZKHeap.
	Heap string
	// ProductionJVM runs the server with the JVM's own choice of collector
	// and compiler (on a server-class machine, G1 and the full JIT), as a
	// deployment's server runs. Without it the server runs the serial
	// collector and the client compiler only (testJVMFlags), which start
	// faster and take less memory, what a test's many short-lived servers
	// want; but the serial collector stops the server for a whole
	// collection of the tree, 0.5-1.6 s at a million queues (the bench's
	// scale section, docs/decisions.md, "Issue 43: the million-key join
	// and leave").
	ProductionJVM bool
}

// zkLogFlags send an ensemble member's log (INFO) to its zookeeper.log
// with times, through slf4j-simple: Debian's class path also holds
// slf4j-nop, which the JVM found first, so the log was empty. Only for
// ensembles (the chaos run, the failover tests); a standalone server (the
// benchmarks) logs nothing. The first thing it showed: a member the chaos
// run restarted on its saturated host spent 33 s between reading its
// configuration and starting its election (5.5 s to load a snapshot of 87
// transactions), and its election took 3 s.
var zkLogFlags = []string{
	"-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
	"-Dorg.slf4j.simpleLogger.showDateTime=true",
	"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ",
}

// testJVMFlags are the JVM flags of a test server (ZKOptions.ProductionJVM
// false): the serial collector and the client compiler, for start-up time
// and footprint.
var testJVMFlags = []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}

// ZooKeeper is one private ZooKeeper server (standalone or an ensemble
// member).
type ZooKeeper struct {
	Addr  string   // this server's client address
	Addrs []string // the addresses a client should use
	*Process
}

// Ensemble is a 3-node ZooKeeper ensemble on one machine.
type Ensemble struct {
	Addrs []string
	Nodes []*ZooKeeper
}

// zkJava returns the java binary and the class path of Debian's zookeeper
// package.
func zkJava() (java, classpath string, err error) {
	java, err = lookBinary("java", "/usr/bin/java")
	if err != nil {
		return "", "", fmt.Errorf("%w; ZooKeeper needs Java: %s", err, ZKHint)
	}
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		return "", "", fmt.Errorf("zookeeper: %w; %s", ErrNotInstalled, ZKHint)
	}
	return java, "/usr/share/zookeeper/*:/usr/share/java/*", nil
}

// StartZooKeeper starts a standalone server with its data in dir (port 0:
// a free one) and waits until it serves requests.
func StartZooKeeper(dir string, port int) (*ZooKeeper, error) {
	return StartZooKeeperWith(dir, ZKOptions{Port: port})
}

// StartZooKeeperWith is StartZooKeeper with options.
func StartZooKeeperWith(dir string, o ZKOptions) (*ZooKeeper, error) {
	var s *ZooKeeper
	var err error
	if o.Port != 0 {
		s, err = launchZK(dir, o.Port, nil, 0, o)
	} else {
		err = onFreePorts(1, func(ports []int) (err error) {
			s, err = launchZK(dir, ports[0], nil, 0, o)
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	s.Addrs = []string{s.Addr}
	return s, nil
}

// StartEnsemble starts a 3-node ensemble under dir and waits until every
// node serves requests.
func StartEnsemble(dir string) (*Ensemble, error) {
	var e *Ensemble
	err := onFreePorts(9, func(ports []int) (err error) {
		e, err = startEnsemble(dir, ports)
		return err
	})
	return e, err
}

// startEnsemble starts the three nodes on ports: client ports, then quorum
// ports, then election ports.
func startEnsemble(dir string, ports []int) (*Ensemble, error) {
	var servers []string
	for i := 0; i < 3; i++ {
		servers = append(servers, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i+1, ports[3+i], ports[6+i]))
	}
	e := &Ensemble{Nodes: make([]*ZooKeeper, 3)}
	for i := 0; i < 3; i++ {
		e.Addrs = append(e.Addrs, "127.0.0.1:"+strconv.Itoa(ports[i]))
	}
	// Start the three JVMs at once: none is ready before a quorum exists.
	type started struct {
		i   int
		s   *ZooKeeper
		err error
	}
	ch := make(chan started, 3)
	for i := 0; i < 3; i++ {
		go func(i int) {
			nodeDir := join(dir, strconv.Itoa(i+1))
			os.RemoveAll(nodeDir) // an earlier attempt's epoch files
			if err := mkdir(nodeDir); err != nil {
				ch <- started{i: i, err: err}
				return
			}
			s, err := launchZK(nodeDir, ports[i], servers, i+1, ZKOptions{})
			ch <- started{i, s, err}
		}(i)
	}
	var firstErr error
	for i := 0; i < 3; i++ {
		r := <-ch
		// A taken port is the error to report: it is the one a start on
		// fresh ports cures.
		if r.err != nil && (firstErr == nil || errors.Is(r.err, errPortTaken)) {
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
				n.Kill()
			}
		}
		return nil, firstErr
	}
	return e, nil
}

// launchZK writes zoo.cfg into dir and starts one server. servers and myid
// are empty for a standalone server; o gives the JVM's heap and flags (its
// Port is not read).
func launchZK(dir string, port int, servers []string, myid int, o ZKOptions) (*ZooKeeper, error) {
	heap := o.Heap
	if heap == "" {
		heap = DefaultZKHeap
	}
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
	argv := []string{java, "-Xmx" + heap}
	if !o.ProductionJVM {
		argv = append(argv, testJVMFlags...)
	}
	if len(servers) > 0 {
		argv = append(argv, zkLogFlags...)
		cp = "/usr/share/java/slf4j-simple.jar:" + cp
	}
	argv = append(argv, "-Xss512k",
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-cp", cp, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath,
	)
	p := &Process{
		name: "zookeeper " + addr, argv: argv, dir: dir, logPath: join(dir, "zookeeper.log"),
		ready: func() error { _, err := ZKMode(addr); return err }, port: port,
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	track(p)
	return &ZooKeeper{Addr: addr, Process: p}, nil
}

// ZKMode asks a server for its mode (standalone, leader, follower). It fails
// while the server does not serve requests (no quorum).
func ZKMode(addr string) (string, error) {
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
		if m, err := ZKMode(a); err == nil && m == "leader" {
			return i, nil
		}
	}
	return -1, fmt.Errorf("no ZooKeeper node reports Mode: leader")
}
