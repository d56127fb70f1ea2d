package localserver

import (
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
