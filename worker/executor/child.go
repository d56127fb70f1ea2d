package executor

import (
	"fmt"
	"os"
)

// childEnv marks a process as a re-executed child of the executor and names
// its mode. The executor removes it from every task's inherited
// environment, and a child unsets it first thing, so a task that runs the
// worker binary again starts an ordinary worker process.
const childEnv = "DROVER_CHILD"

// The modes of a re-executed child.
const (
	// childModeExec: set resource limits on itself, then exec the real
	// program (the rlimit trampoline, child_exec.go).
	childModeExec = "exec"
	// childModeGo: run the registered Go handler for the envelope on stdin
	// (child_go.go).
	childModeGo = "go"
	// childModeLease: the task lease's supervisor (lease_supervisor.go).
	childModeLease = "lease"
)

// RunChildIfRequested turns the process into a task child when the executor
// started it as one, and does nothing otherwise. In a child it never
// returns: it runs the child's work and exits (os.Exit).
//
// Every binary that runs an Executor must call it at the top of main —
// after handlers are registered (drover.Register in init functions, or
// before this call) and before anything else: flag parsing, logging,
// connecting to servers. cmd/drover's main calls it first. Tests of packages
// that run "go" routes or resource limits call it first in TestMain:
//
//	func TestMain(m *testing.M) {
//		executor.RunChildIfRequested()
//		os.Exit(m.Run())
//	}
//
// Without the call, a "go" route or a task with resource limits would start
// a second worker instead of the task.
func RunChildIfRequested() {
	mode := os.Getenv(childEnv)
	if mode == "" {
		return
	}
	os.Unsetenv(childEnv)
	switch mode {
	case childModeExec:
		os.Exit(runExecChild(os.Args))
	case childModeGo:
		os.Exit(runGoChild())
	case childModeGoPool:
		os.Exit(runGoPoolChild())
	case childModeLease:
		os.Exit(runLeaseSupervisor(os.Args))
	}
	fmt.Fprintf(os.Stderr, "drover: %s=%q is not a child mode of this binary\n", childEnv, mode)
	os.Exit(exitChildSetup)
}
