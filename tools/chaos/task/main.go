// Command task is the chaos run's task program (tools/chaos builds it
// into the run directory and routes every queue to it):
//
//	task LOG [STARTS]
//
// With STARTS (the churn benchmark, tools/fleetbench), it first appends
// its start line (check.FormatStart) to STARTS the same way, so that a run
// killed by SIGKILL, which logs no execution line, is still seen.
//
// It reads its envelope from stdin, sleeps args.sleep_ms, and appends its
// execution line — queue, id, attempt, position, worker pid (its parent),
// own pid, start and end in µs of CLOCK_REALTIME — to LOG with one write(2)
// on an O_APPEND descriptor, so that lines of concurrent tasks never
// interleave and a line, once written, survives any process crash. It exits
// 1 (the worker retries) when it cannot write the line. A SIGTERM during the
// sleep appends the line marked killed (end: the signal's time), then the
// task dies of the signal as it would have.
//
// It is a separate, small binary (standard library and the checker's line
// format only) because hundreds start every second: a process start of the
// harness binary, with every dependency's init, costs twice the CPU.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/drover-dev/drover/tools/chaos/check"
)

// taskArgs is the part of a message's args the task reads.
type taskArgs struct {
	SleepMS int `json:"sleep_ms"`
	// Fail makes the task exit 1 without logging (the park queue's
	// failing heads, parked.go).
	Fail bool `json:"fail"`
}

func main() { os.Exit(run(os.Args[1:])) }

// run is the program; the worker starts it directly (no shell, no resource
// limits, so no trampoline re-exec): its parent is the worker process.
func run(args []string) int {
	start := time.Now()
	if len(args) != 1 && len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: task LOG [STARTS]")
		return 2
	}
	var env struct {
		Args taskArgs `json:"args"`
	}
	// A message without args (or unreadable ones) sleeps 0.
	_ = json.NewDecoder(os.Stdin).Decode(&env)
	attempt, _ := strconv.Atoi(os.Getenv("DROVER_ATTEMPT"))
	pos, _ := strconv.ParseInt(os.Getenv("DROVER_POSITION"), 10, 64)
	if len(args) == 2 {
		line := check.FormatStart(check.Execution{Queue: os.Getenv("DROVER_QUEUE"), ID: os.Getenv("DROVER_MESSAGE_ID"),
			Attempt: attempt, Position: pos, WorkerPID: os.Getppid(), PID: os.Getpid(), Start: start})
		if err := appendLine(args[1], line); err != nil {
			fmt.Fprintln(os.Stderr, "append to start log:", err)
			return 1
		}
	}
	if env.Args.Fail {
		return 1
	}
	killed := false
	if env.Args.SleepMS > 0 {
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		select {
		case <-time.After(time.Duration(env.Args.SleepMS) * time.Millisecond):
		case <-term:
			killed = true
		}
		signal.Reset(syscall.SIGTERM)
	}
	line := check.FormatExecution(check.Execution{
		Queue: os.Getenv("DROVER_QUEUE"), ID: os.Getenv("DROVER_MESSAGE_ID"), Attempt: attempt, Position: pos,
		WorkerPID: os.Getppid(), PID: os.Getpid(), Start: start, End: time.Now(), Killed: killed,
	})
	if killed {
		defer func() { syscall.Kill(os.Getpid(), syscall.SIGTERM); time.Sleep(time.Second) }()
	}
	if err := appendLine(args[0], line); err != nil {
		fmt.Fprintln(os.Stderr, "append to task log:", err)
		return 1
	}
	return 0
}

// appendLine appends line to path with one write(2) on an O_APPEND
// descriptor.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte(line)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
