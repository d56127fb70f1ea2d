package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// childStopGrace is how long a child may take to exit after SIGTERM (the
// dev workers' drain timeout is 5s) before it is killed.
const childStopGrace = 15 * time.Second

// devFleet is dev's child processes: the workers and the scheduler, each a
// process of this same binary in its own process group with a parent-death
// signal.
type devFleet struct {
	children []*child
	// allExited is closed when every child has exited.
	allExited chan struct{}
	// died receives each child that exits before stop was called, at
	// once, so that dev can name it (see report). Buffered for every
	// child: a child's reaper never blocks on it.
	died chan *child
	// stopping is set by stop: exits after it are expected.
	stopping atomic.Bool
}

type child struct {
	name    string
	admin   string // admin address
	logPath string
	started time.Time
	cmd     *exec.Cmd
	done    chan struct{} // closed when the child has been reaped
	err     error         // its exit status, once done
	// reported is set once report has described the exit.
	reported atomic.Bool
}

// devMaxChildren bounds the died channel's buffer.
const devMaxChildren = 1024

func newFleet() *devFleet {
	return &devFleet{allExited: make(chan struct{}), died: make(chan *child, devMaxChildren)}
}

// reportLines is how many of its log's last lines a died child's report
// shows.
const reportLines = 8

// report says that c died, how, and shows the last lines of its log; ""
// when c was reported before.
func (c *child) report() string {
	if c.reported.Swap(true) {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "dev: %s (pid %d) exited after %s: %v", c.name, c.pid(), time.Since(c.started).Round(100*time.Millisecond), c.exitStatus())
	lines := lastLines(c.logPath, reportLines)
	if len(lines) == 0 {
		fmt.Fprintf(&b, "; its log %s is empty\n", c.logPath)
		return b.String()
	}
	fmt.Fprintf(&b, "; the last lines of %s:\n", c.logPath)
	for _, l := range lines {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	return b.String()
}

// exitStatus is c's exit status for people: "exit status 0" rather than
// a nil error.
func (c *child) exitStatus() string {
	if c.err == nil {
		return "exit status 0"
	}
	return c.err.Error()
}

// lastLines returns up to n last non-empty lines of the file at path (of its
// last 64 KiB); nil when it cannot be read.
func lastLines(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	const tail = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > tail {
		f.Seek(st.Size()-tail, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines[max(0, len(lines)-n):]
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// startFleet starts o.workers workers (worker-1…, each with its own admin
// port) and one scheduler (scheduler-1).
func startFleet(a *app, cfgPath, dir string, o devOptions) (*devFleet, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("dev: find this binary: %w", err)
	}
	if o.workers+1 > devMaxChildren {
		return nil, usagef("--workers: want at most %d, have %d", devMaxChildren-1, o.workers)
	}
	fl := newFleet()
	// Every child gets its own admin port: a fixed one (the default
	// 127.0.0.1:9090 and :9091) collides with anything else on the
	// machine, such as another dev fleet or a test run. Dev listens on a
	// free port and hands the socket down (adminFDEnv): a port chosen
	// here and bound later by the child could be taken in between.
	start := func(name, command string) error {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fl.stop(a.stderr)
			return fmt.Errorf("dev: listen for %s's admin server: %w", name, err)
		}
		admin := ln.Addr().String()
		err = fl.start(a, self, dir, name, admin, ln.(*net.TCPListener), o.logs, command, "-c", cfgPath, "--name", name, "--admin-addr", admin)
		ln.Close() // the child holds its own copy
		if err != nil {
			fl.stop(a.stderr)
			return err
		}
		return nil
	}
	for i := 1; i <= o.workers; i++ {
		if err := start(fmt.Sprintf("worker-%d", i), "worker"); err != nil {
			return nil, err
		}
	}
	if err := start("scheduler-1", "scheduler"); err != nil {
		return nil, err
	}
	fl.watch()
	return fl, nil
}

// start starts one child, serving its admin server on ln when not nil, and
// adds it to the fleet.
func (fl *devFleet) start(a *app, self, dir, name, admin string, ln *net.TCPListener, stream bool, args ...string) error {
	var f *os.File
	if ln != nil {
		var err error
		if f, err = ln.File(); err != nil {
			return fmt.Errorf("dev: hand %s its admin socket: %w", name, err)
		}
		defer f.Close() // the child has its own after the start
	}
	c, err := startChild(a, self, dir, name, stream, args, fl.exited, f)
	if err != nil {
		return err
	}
	c.admin = admin
	fl.children = append(fl.children, c)
	return nil
}

// exited is called by a child's reaper: an exit before stop is reported
// on died.
func (fl *devFleet) exited(c *child) {
	if !fl.stopping.Load() {
		select {
		case fl.died <- c:
		default: // more children than devMaxChildren: cannot happen
		}
	}
}

// watch closes allExited once every child has exited. Call it once, after
// the last start.
func (fl *devFleet) watch() {
	children := append([]*child(nil), fl.children...)
	go func() {
		for _, c := range children {
			<-c.done
		}
		close(fl.allExited)
	}()
}

// startChild starts one child. Its output goes to <dir>/logs/<name>.log and,
// when stream, to a's stderr with a "name | " prefix. exited is called
// once the child has been reaped. admin, when not nil, is the listening
// socket of the child's admin server (fd 3 in the child, named by
// adminFDEnv).
func startChild(a *app, self, dir, name string, stream bool, args []string, exited func(*child), admin *os.File) (*child, error) {
	logPath := filepath.Join(dir, "logs", name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dev: open %s: %w", logPath, err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = a.env
	if admin != nil {
		cmd.ExtraFiles = []*os.File{admin}
		env := a.env
		if env == nil {
			env = os.Environ()
		}
		cmd.Env = append(append([]string(nil), env...), adminFDEnv+"=3")
	}
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
	c := &child{name: name, logPath: logPath, started: time.Now(), cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		logf.Close()
		if pw != nil {
			pw.Close()
		}
		close(c.done)
		exited(c)
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
func (fl *devFleet) stop(w io.Writer) {
	fl.stopping.Store(true)
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
		if c.err != nil && !c.reported.Load() { // a reported death was told in full
			fmt.Fprintf(w, "dev: %s exited: %v\n", c.name, c.err)
		}
	}
	fl.children = nil
}
