package queue

import (
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Private Redis processes for the tests testenv does not cover (Sentinel,
// TLS).

// freeLoopbackPort returns a loopback address with a port that was free a
// moment ago, and the port.
func freeLoopbackPort(t *testing.T) (addr, port string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	addr = l.Addr().String()
	_ = l.Close()
	_, port, _ = strings.Cut(addr, ":")
	return addr, port
}

// runRedisServer starts redis-server with args for this test (killed when it
// ends, and with the test binary) and waits until ready reports true.
func runRedisServer(t *testing.T, args []string, ready func() bool) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (%v): install it with `apt-get install redis-server` (Debian)", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server %v: %v", args, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for !ready() {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server %v not ready after 30s", args)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
