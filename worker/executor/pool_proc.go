package executor

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A pooled child as the worker sees it: the process, its protocol pipes,
// its output pipes and the goroutines that read them.

// pooledChild is one warm child. Its fields are set at start; served and
// lastUsed belong to whoever holds the child (one task at a time).
type pooledChild struct {
	groupLeader           // reaped by stop; status is valid once stop has returned
	started     time.Time // by the real clock: ages are real time
	tasks       *os.File  // our end of the child's fd 3
	results     chan frameRead
	stdout      *childOutput
	stderr      *childOutput
	stopRd      chan struct{} // closed to stop the result reader
	readers     sync.WaitGroup

	seq      uint64      // the last task sent; the task holding the child owns it
	frame    []byte      // the last task frame's buffer, reused; the task holding the child owns it
	deadline *time.Timer // the running task's deadline, reset for each task; the task holding the child owns it
	lastUsed time.Time   // set by the task holding the child
	served   int         // tasks that got a result; guarded by the pool's mutex
	busy     bool        // guarded by the pool's mutex
	// replacedAhead: its replacement was started before it reached
	// max_tasks_per_child; guarded by the pool's mutex.
	replacedAhead bool
	closed        atomic.Bool // killed because the executor was closed
	lease         *Lease      // tracks the child's group; nil without a lease
}

// frameRead is one frame (or the error that ended reading) from fd 4.
type frameRead struct {
	body []byte
	err  error
}

// startPooledChild starts path with argv and env as a pooled child: its own
// process group, SIGKILL on the worker's death, stdin /dev/null, stdout and
// stderr captured, the task pipe on fd 3 and the result pipe on fd 4. It
// does not wait for the ready frame.
func startPooledChild(path string, argv, env []string, dir string, cred *syscall.Credential, outputLimit int) (c *pooledChild, err error) {
	var (
		childFDs []int
		parent   []*os.File
	)
	defer func() {
		for _, fd := range childFDs {
			syscall.Close(fd)
		}
		if err != nil {
			closeAll(parent...)
		}
	}()
	devNull, err := syscall.Open(os.DevNull, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	childFDs = append(childFDs, devNull)
	// Pipes whose parent end we read (stdout, stderr, results) and the one
	// we write (tasks).
	var files [4]*os.File // stdout, stderr, results: read ends; tasks: write end
	var fds [4]int        // the child's ends
	for i, name := range []string{"stdout", "stderr", "results", "tasks"} {
		r, w, err := pipe()
		if err != nil {
			return nil, fmt.Errorf("%s pipe: %w", name, err)
		}
		mine, theirs := r, w
		if name == "tasks" {
			mine, theirs = w, r
		}
		childFDs = append(childFDs, theirs)
		fds[i] = theirs
		if files[i], err = pollable(mine, name); err != nil {
			return nil, err
		}
		parent = append(parent, files[i])
	}
	c = &pooledChild{
		results: make(chan frameRead, 1), stopRd: make(chan struct{}), tasks: files[3],
		stdout: newChildOutput(files[0], outputLimit), stderr: newChildOutput(files[1], outputLimit),
	}
	// 0 stdin, 1 stdout, 2 stderr, 3 tasks, 4 results.
	err = c.fork(path, argv, env, dir, []uintptr{uintptr(devNull), uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[3]), uintptr(fds[2])}, cred)
	if err != nil {
		return nil, err
	}
	c.started = time.Now()
	c.readers.Add(3)
	go func() { defer c.readers.Done(); c.stdout.run() }()
	go func() { defer c.readers.Done(); c.stderr.run() }()
	go func() { defer c.readers.Done(); c.readResults(files[2]) }()
	return c, nil
}

// readResults reads frames from r until it fails, handing each to results.
// It closes r when it returns.
func (c *pooledChild) readResults(r *os.File) {
	defer r.Close()
	br := bufio.NewReaderSize(r, 4096) // one read takes a whole small frame
	for {
		body, err := readFrame(br, nil, maxChildFrame)
		select {
		case c.results <- frameRead{body, err}:
		case <-c.stopRd:
			return
		}
		if err != nil {
			return
		}
	}
}

// stop ends the child and everything in its process group and releases its
// pipes. Closing fd 3 asks it to exit; after grace (or at once when kill is
// set) the group gets SIGKILL. It returns once the process is reaped and
// its readers are done (or outputDrainTimeout has passed for output held
// open by an escaped descendant).
func (c *pooledChild) stop(grace time.Duration, kill bool) {
	c.tasks.Close()
	if kill {
		killGroup(c.pid, syscall.SIGKILL)
	}
	t := time.NewTimer(grace)
	select {
	case <-c.exited:
	case <-t.C:
		killGroup(c.pid, syscall.SIGKILL)
		<-c.exited
	}
	t.Stop()
	c.killRest(c.lease) // the leader is gone; so must be everything it left in its group
	c.reap()
	close(c.stopRd)
	c.stdout.finish()
	c.stderr.finish()
	c.readers.Wait()
}

// rss returns the child's resident set size in bytes from
// /proc/<pid>/statm, or 0 when it cannot be read.
func (c *pooledChild) rss() int64 {
	return processRSS(c.pid)
}

// processRSS reads a process's resident set size in bytes from
// /proc/<pid>/statm (its second field, in pages); 0 when unreadable.
func processRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// childOutput captures one output pipe of a pooled child. Bytes read while
// a task runs go to that task's buffer; bytes read between tasks go to the
// idle buffer, logged with the next task or at the child's end.
//
// Reads happen under mu, in the raw connection's read callback, so a task's
// end (take) can drain what is left in the pipe and know that no byte is
// held by the reader in between: everything the child wrote before its
// result frame is in the task's buffer.
type childOutput struct {
	f     *os.File
	rc    syscall.RawConn // f's; nil if it has none
	limit int
	done  chan struct{} // closed when run returns

	mu      sync.Mutex
	current *tailBuffer // the running task's, nil between tasks
	idle    *tailBuffer
	spare   *tailBuffer // an empty one for the next task: most tasks write nothing
	scratch []byte
}

func newChildOutput(f *os.File, limit int) *childOutput {
	o := &childOutput{f: f, limit: limit, done: make(chan struct{}), idle: newTailBuffer(limit)}
	if rc, err := f.SyscallConn(); err == nil {
		o.rc = rc
	}
	return o
}

// run reads the pipe until end of file (the child and its group are gone)
// or until finish sets a read deadline.
func (o *childOutput) run() {
	defer close(o.done)
	if o.rc == nil {
		return
	}
	_ = o.rc.Read(func(fd uintptr) bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.drainLocked(int(fd))
	})
}

// drainLocked reads fd until it would block (false: wait for more) or ends
// (true: end of file or an error). o.mu is held.
func (o *childOutput) drainLocked(fd int) bool {
	if o.scratch == nil {
		o.scratch = make([]byte, 16<<10)
	}
	for {
		n, err := syscall.Read(fd, o.scratch)
		switch {
		case n > 0:
			o.target().Write(o.scratch[:n])
		case errors.Is(err, syscall.EINTR):
		case errors.Is(err, syscall.EAGAIN):
			return false
		default: // n == 0: end of file, or an error
			return true
		}
	}
}

// target is where bytes read now belong. o.mu is held.
func (o *childOutput) target() *tailBuffer {
	if o.current != nil {
		return o.current
	}
	return o.idle
}

// begin starts a task's capture and returns what the child wrote since the
// last task ended (nil when nothing).
func (o *childOutput) begin() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.current = o.spare; o.current == nil {
		o.current = newTailBuffer(o.limit)
	}
	o.spare = nil
	return o.takeIdleLocked()
}

// take ends the running task's capture: it reads what is in the pipe now
// and returns the task's tail and whether earlier bytes were dropped.
func (o *childOutput) take() ([]byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.rc != nil {
		_ = o.rc.Control(func(fd uintptr) { o.drainLocked(int(fd)) })
	}
	return o.endLocked()
}

// endLocked ends the task's capture. o.mu is held.
func (o *childOutput) endLocked() ([]byte, bool) {
	b := o.current
	o.current = nil
	if b == nil {
		return nil, false
	}
	if b.total == 0 {
		o.spare = b // nothing of it goes to the caller: reuse it
		return nil, false
	}
	return b.Bytes(), b.Truncated()
}

// takeOutput ends the running task's capture of both stdout and stderr,
// like take on each, with one poll(2) for the two pipes instead of a read
// on each: the common task writes nothing.
func (c *pooledChild) takeOutput(res *Result, truncated *[2]bool) {
	out, errOut := c.stdout, c.stderr
	out.mu.Lock()
	defer out.mu.Unlock()
	errOut.mu.Lock()
	defer errOut.mu.Unlock()
	if out.rc != nil && errOut.rc != nil {
		_ = out.rc.Control(func(fdOut uintptr) {
			_ = errOut.rc.Control(func(fdErr uintptr) {
				fds := []unix.PollFd{{Fd: int32(fdOut), Events: unix.POLLIN}, {Fd: int32(fdErr), Events: unix.POLLIN}}
				for {
					_, err := unix.Poll(fds, 0)
					if !errors.Is(err, syscall.EINTR) {
						break
					}
				}
				if fds[0].Revents != 0 {
					out.drainLocked(int(fdOut))
				}
				if fds[1].Revents != 0 {
					errOut.drainLocked(int(fdErr))
				}
			})
		})
	}
	res.Stdout, truncated[0] = out.endLocked()
	res.Stderr, truncated[1] = errOut.endLocked()
}

// takeIdleLocked returns and resets the idle buffer. o.mu is held.
func (o *childOutput) takeIdleLocked() []byte {
	out := o.idle.Bytes()
	if out != nil {
		out = append([]byte(nil), out...)
		o.idle = newTailBuffer(o.limit)
	}
	return out
}

// leftover returns what was written outside any task, once run is done.
func (o *childOutput) leftover() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.takeIdleLocked()
}

// finish waits for run to reach end of file, at most outputDrainTimeout (a
// descendant that left the group may hold the pipe), then closes the pipe.
func (o *childOutput) finish() {
	select {
	case <-o.done:
	case <-time.After(outputDrainTimeout):
		_ = o.f.SetReadDeadline(time.Now())
		<-o.done
	}
	o.f.Close()
}

// writeFrame writes one frame to the child's task pipe, giving up at
// deadline (zero: none).
func (c *pooledChild) writeFrame(frame []byte, deadline time.Time) error {
	if err := c.tasks.SetWriteDeadline(deadline); err != nil {
		return err
	}
	_, err := c.tasks.Write(frame)
	return err
}

// ioErrIsTimeout reports whether err is a deadline of os.File I/O.
func ioErrIsTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}
