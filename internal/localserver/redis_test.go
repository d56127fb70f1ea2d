package localserver

import (
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// A cluster node's bus listens on a port chosen free, not on its client
// port + 10,000, which nothing reserved: the start failed now and then when
// another process held that port (seen once while two test runs shared
// the machine).
func TestClusterBusPortsAreChosenFree(t *testing.T) {
	c, err := StartRedisCluster(t.TempDir())
	if err != nil {
		t.Fatalf("start: %v (%s)", err, RedisHint)
	}
	t.Cleanup(func() {
		for _, n := range c.Nodes {
			n.Stop()
		}
	})
	host, port, _ := net.SplitHostPort(c.Addrs[0])
	out, err := exec.Command("redis-cli", "-h", host, "-p", port, "cluster", "nodes").Output()
	if err != nil {
		t.Fatalf("cluster nodes: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 nodes, have:\n%s", out)
	}
	for _, l := range lines {
		// <id> <ip>:<port>@<bus port> …
		addr := strings.Fields(l)[1]
		hostPort, bus, ok := strings.Cut(addr, "@")
		_, p, _ := net.SplitHostPort(hostPort)
		pn, _ := strconv.Atoi(p)
		bn, _ := strconv.Atoi(strings.Split(bus, ",")[0])
		if !ok || bn == 0 || bn == pn+10000 {
			t.Fatalf("node %s: want a bus port of its own, have %q", hostPort, addr)
		}
	}
}

// fakeServer listens on a free loopback port and answers every connection
// as both servers' readiness checks expect: +PONG for Redis, a Mode line for
// ZooKeeper. It stands for another process that took a port picked free.
func fakeServer(t *testing.T) *net.TCPListener {
	t.Helper()
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 64)
			n, _ := c.Read(buf)
			if strings.HasPrefix(string(buf[:n]), "srvr") {
				c.Write([]byte("Zookeeper version: fake\nMode: standalone\n"))
			} else {
				c.Write([]byte("+PONG\r\n"))
			}
			c.Close()
		}
	}()
	return l
}

// handOutTaken makes the next pick of ports start with port, then picks
// free ones again; it returns how many picks were made.
func handOutTaken(t *testing.T, port int) *int {
	picks := 0
	pickPorts = func(n int) ([]int, error) {
		picks++
		ports, err := freePorts(n)
		if err == nil && picks == 1 {
			ports[0] = port
		}
		return ports, err
	}
	t.Cleanup(func() { pickPorts = freePorts })
	return &picks
}

// A port picked free can be taken by another process before the server
// listens on it. The start used to take whatever answered there for the new
// server (two tests then shared one Redis, or talked to a stranger); now it
// sees that the listener is not its server's and starts again on a fresh
// port.
func TestRedisStartsAgainWhenAnotherProcessTookItsPort(t *testing.T) {
	l := fakeServer(t)
	picks := handOutTaken(t, l.Addr().(*net.TCPAddr).Port)

	r, err := StartRedis(t.TempDir(), RedisOptions{})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { r.Stop() })
	if r.Addr == l.Addr().String() {
		t.Fatalf("the server at %s is the process that took the port, not the new Redis", r.Addr)
	}
	if *picks != 2 {
		t.Fatalf("want 2 picks of a port (the taken one, then a free one), have %d", *picks)
	}
	_, port, _ := net.SplitHostPort(r.Addr)
	pn, _ := strconv.Atoi(port)
	if own, err := listensOn(r.PID(), pn); !own || err != nil {
		t.Fatalf("redis (pid %d) does not listen on %s: %v %v", r.PID(), r.Addr, own, err)
	}
}

func TestZooKeeperStartsAgainWhenAnotherProcessTookItsPort(t *testing.T) {
	l := fakeServer(t)
	picks := handOutTaken(t, l.Addr().(*net.TCPAddr).Port)

	z, err := StartZooKeeper(t.TempDir(), 0)
	if err != nil {
		t.Fatalf("start: %v (%s)", err, ZKHint)
	}
	t.Cleanup(func() { z.Stop() })
	if z.Addr == l.Addr().String() {
		t.Fatalf("the server at %s is the process that took the port, not the new ZooKeeper", z.Addr)
	}
	if *picks != 2 {
		t.Fatalf("want 2 picks of a port (the taken one, then a free one), have %d", *picks)
	}
}

// A port the caller chose is not swapped for another: the start fails and
// says the port is taken.
func TestRedisOnATakenPortFailsAndSaysSo(t *testing.T) {
	l := fakeServer(t)
	r, err := StartRedis(t.TempDir(), RedisOptions{Port: l.Addr().(*net.TCPAddr).Port})
	if err == nil {
		r.Stop()
		t.Fatalf("started on %s, which another process holds", r.Addr)
	}
	if !errors.Is(err, errPortTaken) || !strings.Contains(err.Error(), "port is taken") {
		t.Fatalf("want an error saying the port is taken, have %v", err)
	}
}
