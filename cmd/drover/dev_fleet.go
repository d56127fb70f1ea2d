package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// childStopGrace is how long a child may take to exit after SIGTERM (the
// dev workers' drain timeout is 5s) before it is killed.
const childStopGrace = 15 * time.Second

// fleet is dev's child processes: the workers and the scheduler, each a
// process of this same binary in its own process group with a parent-death
// signal.
type fleet struct {
	children []*child
	// allExited is closed when every child has exited.
	allExited chan struct{}
}

type child struct {
	name  string
	admin string // admin address, for workers
	cmd   *exec.Cmd
	done  chan struct{} // closed when the child has been reaped
	err   error         // its exit status, once done
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// startFleet starts o.workers workers (worker-1…, each with its own admin
// port) and one scheduler (scheduler-1).
func startFleet(a *app, cfgPath, dir string, o devOptions) (*fleet, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("dev: find this binary: %w", err)
	}
	fl := &fleet{allExited: make(chan struct{})}
	start := func(name string, args ...string) error {
		c, err := startChild(a, self, dir, name, o.logs, args)
		if err != nil {
			fl.stop(a.stderr)
			return err
		}
		fl.children = append(fl.children, c)
		return nil
	}
	for i := 1; i <= o.workers; i++ {
		port, err := freeLoopbackPort()
		if err != nil {
			return nil, err
		}
		name, admin := fmt.Sprintf("worker-%d", i), fmt.Sprintf("127.0.0.1:%d", port)
		if err := start(name, "worker", "-c", cfgPath, "--name", name, "--admin-addr", admin); err != nil {
			return nil, err
		}
		fl.children[len(fl.children)-1].admin = admin
	}
	if err := start("scheduler-1", "scheduler", "-c", cfgPath, "--name", "scheduler-1"); err != nil {
		return nil, err
	}
	go func() {
		for _, c := range fl.children {
			<-c.done
		}
		close(fl.allExited)
	}()
	return fl, nil
}

// startChild starts one child. Its output goes to <dir>/logs/<name>.log and,
// when stream, to a's stderr with a "name | " prefix.
func startChild(a *app, self, dir, name string, stream bool, args []string) (*child, error) {
	logPath := filepath.Join(dir, "logs", name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dev: open %s: %w", logPath, err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = a.env
	var out io.Writer = logf
	var pw *io.PipeWriter
	if stream {
		var pr *io.PipeReader
		pr, pw = io.Pipe()
		out = io.MultiWriter(logf, pw)
		go prefixLines(a.stderr, name, pr)
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Own process group: a terminal's Ctrl-C reaches dev only, and dev stops
	// the children in order. Pdeathsig: a child dies with dev even when dev
	// is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("dev: start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		logf.Close()
		if pw != nil {
			pw.Close()
		}
		close(c.done)
	}()
	return c, nil
}

// prefixLines copies r to w line by line, each prefixed with name.
func prefixLines(w io.Writer, name string, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fmt.Fprintf(w, "%-11s| %s\n", name, sc.Text())
	}
	io.Copy(io.Discard, r)
}

// stop sends SIGTERM to every child's process group, waits for all of them
// (SIGKILL after childStopGrace), and reports exits that were not clean.
// It returns only when every child has been reaped. Idempotent.
func (fl *fleet) stop(w io.Writer) {
	for _, c := range fl.children {
		select {
		case <-c.done:
		default:
			syscall.Kill(-c.pid(), syscall.SIGTERM)
		}
	}
	var wg sync.WaitGroup
	for _, c := range fl.children {
		wg.Add(1)
		go func(c *child) {
			defer wg.Done()
			select {
			case <-c.done:
			case <-time.After(childStopGrace):
				fmt.Fprintf(w, "dev: %s did not stop within %s; killing it\n", c.name, childStopGrace)
				syscall.Kill(-c.pid(), syscall.SIGKILL)
				<-c.done
			}
		}(c)
	}
	wg.Wait()
	for _, c := range fl.children {
		if c.err != nil {
			fmt.Fprintf(w, "dev: %s exited: %v\n", c.name, c.err)
		}
	}
	fl.children = nil
}

// freeLoopbackPort returns a loopback TCP port that was free a moment ago.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("dev: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
