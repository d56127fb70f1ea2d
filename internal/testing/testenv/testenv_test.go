package testenv

import (
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/localserver"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

func TestRedisAnswersAndRestarts(t *testing.T) {
	s := NewRedis(t, RedisOptions{AppendOnly: true})
	if r, err := "+PONG", localserver.PingRedis(s.Addr); err != nil {
		t.Fatalf("PING: want +PONG, have %q (%v)", r, err)
	}
	s.Stop(t)
	if _, err := "", localserver.PingRedis(s.Addr); err == nil {
		t.Fatalf("want no answer from a stopped server, have one")
	}
	s.Start(t)
	if r, err := "+PONG", localserver.PingRedis(s.Addr); err != nil {
		t.Fatalf("PING after restart: want +PONG, have %q (%v)", r, err)
	}
}

func TestSharedServersAnswer(t *testing.T) {
	r := Redis(t)
	if reply, err := "+PONG", localserver.PingRedis(r.Addr); err != nil {
		t.Fatalf("shared redis PING: want +PONG, have %q (%v)", reply, err)
	}
	c := RedisCluster(t)
	if len(c.Addrs) != 3 {
		t.Fatalf("cluster: want 3 masters, have %d", len(c.Addrs))
	}
	z := ZooKeeper(t)
	if m, err := localserver.ZKMode(z.Addrs[0]); err != nil || m != "standalone" {
		t.Fatalf("zookeeper mode: want standalone, have %q (%v)", m, err)
	}
}

func TestEnsembleHasOneLeader(t *testing.T) {
	e := ZKEnsemble(t)
	if len(e.Addrs) != 3 {
		t.Fatalf("want 3 nodes, have %d", len(e.Addrs))
	}
	leaders := 0
	for _, a := range e.Addrs {
		m, err := localserver.ZKMode(a)
		if err != nil {
			t.Fatalf("node %s: %v", a, err)
		}
		if m == "leader" {
			leaders++
		}
	}
	if leaders != 1 {
		t.Fatalf("want exactly 1 leader, have %d", leaders)
	}
	if _, err := e.Leader(); err != nil {
		t.Fatal(err)
	}
}

func TestProxyCutBlackholeRestore(t *testing.T) {
	// An echo server as the target.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c)
		}
	}()
	p := NewProxy(t, ln.Addr().String())
	// A trip that must succeed waits long (300 ms could pass on a loaded
	// 2-core machine under -race); one through a blackhole fails only by
	// its deadline, so it waits briefly.
	roundTrip := func(wait time.Duration) error {
		c, err := net.DialTimeout("tcp", p.Addr, wait)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(wait))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		_, err = io.ReadFull(c, buf)
		return err
	}
	if err := roundTrip(30 * time.Second); err != nil {
		t.Fatalf("open proxy: want echo, have %v", err)
	}
	p.Cut()
	if err := roundTrip(300 * time.Millisecond); err == nil {
		t.Fatalf("cut proxy: want an error, have an echo")
	}
	p.Blackhole()
	if err := roundTrip(300 * time.Millisecond); err == nil {
		t.Fatalf("blackholed proxy: want a timeout, have an echo")
	}
	p.Restore()
	if err := roundTrip(30 * time.Second); err != nil {
		t.Fatalf("restored proxy: want echo, have %v", err)
	}
}

func TestPrefixAndChrootAreUniqueAndClean(t *testing.T) {
	a, b := Prefix(t), Prefix(t)
	if a == b {
		t.Fatalf("want distinct prefixes, have %q twice", a)
	}
	if strings.ContainsAny(a, "{}:/ ") {
		t.Fatalf("prefix %q holds a reserved character", a)
	}
	if c := Chroot(t); !strings.HasPrefix(c, "/t/") || strings.Count(c, "/") != 2 {
		t.Fatalf("chroot: want /t/<name>, have %q", c)
	}
}

// The test ZooKeeper's JVM gets a heap that holds a 100,000-queue fleet
// (DefaultZKHeap): at the former 256 MB the server spent its time in full
// collections and stopped granting sessions.
func TestZooKeeperHeapFitsTheLargeFleet(t *testing.T) {
	h := localserver.DefaultZKHeap
	mb, err := strconv.Atoi(h[:len(h)-1])
	switch {
	case err != nil:
		t.Fatalf("DefaultZKHeap %q: want <n>g or <n>m", h)
	case strings.HasSuffix(h, "g"):
		mb *= 1024
	case !strings.HasSuffix(h, "m"):
		t.Fatalf("DefaultZKHeap %q: want <n>g or <n>m", h)
	}
	if mb < 1024 {
		t.Fatalf("DefaultZKHeap: want at least 1 GB (a 100,000-queue fleet keeps ~300 MB live), have %s", h)
	}
	s := NewZooKeeper(t)
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(s.PID()) + "/cmdline")
	if err != nil {
		t.Fatalf("read the server's command line: %v", err)
	}
	args := strings.Split(string(cmdline), "\x00")
	want := "-Xmx" + localserver.DefaultZKHeap
	for _, a := range args {
		if a == want {
			return
		}
	}
	t.Fatalf("want %s among the JVM's arguments, have %q", want, args)
}
