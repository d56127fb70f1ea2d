package testenv

import (
	"syscall"
	"testing"

	"github.com/drover-dev/drover/internal/localserver"
)

// faults are the fault helpers every server kind has (RedisServer and
// ZKServer embed them). They act on the server's process when testenv
// started it; on a server from the environment or Docker (no process) each
// fails the test and says which constructor gives a server that has them.
type faults struct {
	p    *localserver.Process // nil: from the environment or Docker
	what string               // the server, for the failure: "redis 127.0.0.1:6379"
	use  string               // the constructors of servers with a process
}

func (f faults) proc(t testing.TB) *localserver.Process {
	t.Helper()
	if f.p == nil {
		t.Fatalf("testenv: %s was not started by testenv (environment or Docker): use %s for fault tests", f.what, f.use)
	}
	return f.p
}

// PID returns the server's process id (0 when stopped, from the
// environment or from Docker).
func (f faults) PID() int {
	if f.p == nil {
		return 0
	}
	return f.p.PID()
}

// Stop shuts the server down with SIGTERM (Redis flushes an append-only
// file first).
func (f faults) Stop(t testing.TB) { t.Helper(); f.proc(t).Stop() }

// Kill kills the server with SIGKILL.
func (f faults) Kill(t testing.TB) { t.Helper(); f.proc(t).Kill() }

// Start starts a stopped server again with the same port, configuration
// and data, and returns once it serves requests.
func (f faults) Start(t testing.TB) {
	t.Helper()
	if err := f.proc(t).Start(); err != nil {
		t.Fatalf("testenv: restart: %v", err)
	}
}

// Pause freezes the server with SIGSTOP (for ZooKeeper: a hung JVM).
func (f faults) Pause(t testing.TB) { t.Helper(); f.signal(t, syscall.SIGSTOP) }

// Resume thaws a paused server with SIGCONT.
func (f faults) Resume(t testing.TB) { t.Helper(); f.signal(t, syscall.SIGCONT) }

func (f faults) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := f.proc(t).Signal(sig); err != nil {
		t.Fatalf("testenv: %v", err)
	}
}
