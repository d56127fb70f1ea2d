// Command task is the chaos run's task program (internal/chaos builds it
// into the run directory and routes every queue to it):
//
//	task LOG
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

	"github.com/drover-dev/drover/internal/chaos/check"
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
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: task LOG")
		return 2
	}
	var env struct {
		Args taskArgs `json:"args"`
	}
	// A message without args (or unreadable ones) sleeps 0.
	_ = json.NewDecoder(os.Stdin).Decode(&env)
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
	attempt, _ := strconv.Atoi(os.Getenv("DROVER_ATTEMPT"))
	pos, _ := strconv.ParseInt(os.Getenv("DROVER_POSITION"), 10, 64)
	line := check.FormatExecution(check.Execution{
		Queue: os.Getenv("DROVER_QUEUE"), ID: os.Getenv("DROVER_MESSAGE_ID"), Attempt: attempt, Position: pos,
		WorkerPID: os.Getppid(), PID: os.Getpid(), Start: start, End: time.Now(), Killed: killed,
	})
	if killed {
		defer func() { syscall.Kill(os.Getpid(), syscall.SIGTERM); time.Sleep(time.Second) }()
	}
	f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open task log:", err)
		return 1
	}
	if _, err := f.Write([]byte(line)); err != nil {
		fmt.Fprintln(os.Stderr, "append to task log:", err)
		f.Close()
		return 1
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close task log:", err)
		return 1
	}
	return 0
}
