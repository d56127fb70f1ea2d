package executor

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// The process layer under the subprocess executor: start a task process in
// its own process group with the envelope on stdin, read its output into
// tail buffers, reap it. It uses syscall.ForkExec and raw pipes rather than
// os/exec: only the parent's ends of the output pipes go through the
// runtime poller, which halves the cost around the fork itself (see
// BenchmarkExecTrue against BenchmarkBareSpawnTrue).

// stdinPrefill is the largest envelope written into the stdin pipe before
// the child starts. A pipe always holds at least one page, even when the
// user's pipe quota is exhausted, so such a write never blocks; a larger
// envelope is written by a goroutine while the child reads.
const stdinPrefill = 4096

// outputDrainTimeout bounds how long the executor reads a task's output
// after its process group is gone. Only a descendant that left the group
// (setsid) and kept stdout or stderr open can hold it up.
const outputDrainTimeout = time.Second

// process is a started task process and the goroutines that serve it.
type process struct {
	groupLeader
	stdout, stderr *tailBuffer
	outR, errR     *os.File
	stdinW         *os.File      // nil when the envelope was prefilled
	done           chan struct{} // one value per finished I/O goroutine
	pending        int           // I/O goroutines not yet finished
}

// startProcess starts path with argv in its own process group, with the
// envelope on stdin, stdout and stderr read into tail buffers of
// outputLimit bytes by goroutines, and a goroutine that waits for its exit.
// The caller must wait for exited, kill what is left of the group
// (killRest), then reap it and collect.
func startProcess(path string, argv, env []string, dir string, cred *syscall.Credential,
	envelope []byte, outputLimit int, bufs *sync.Pool) (p *process, err error) {
	var (
		childFDs [3]int // stdin, stdout, stderr as the child gets them
		parent   []*os.File
	)
	for i := range childFDs {
		childFDs[i] = -1
	}
	defer func() {
		for _, fd := range childFDs {
			if fd >= 0 {
				syscall.Close(fd)
			}
		}
		if err != nil {
			closeAll(parent...)
		}
	}()

	// stdin: prefilled, or written by a goroutine once the child runs.
	stdinR, stdinW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	childFDs[0] = stdinR
	var stdinFile *os.File
	if len(envelope) <= stdinPrefill {
		err = writeAll(stdinW, envelope)
		syscall.Close(stdinW)
		if err != nil {
			return nil, fmt.Errorf("write envelope to stdin pipe: %w", err)
		}
	} else {
		if stdinFile, err = pollable(stdinW, "stdin"); err != nil {
			return nil, err
		}
		parent = append(parent, stdinFile)
	}
	var outFiles [2]*os.File
	for i, name := range []string{"stdout", "stderr"} {
		r, w, err := pipe()
		if err != nil {
			return nil, fmt.Errorf("%s pipe: %w", name, err)
		}
		childFDs[1+i] = w
		if outFiles[i], err = pollable(r, name); err != nil {
			return nil, err
		}
		parent = append(parent, outFiles[i])
	}

	p = &process{
		outR: outFiles[0], errR: outFiles[1], stdinW: stdinFile,
		stdout: newTailBuffer(outputLimit), stderr: newTailBuffer(outputLimit),
		done: make(chan struct{}, 3), pending: 2,
	}
	files := []uintptr{uintptr(childFDs[0]), uintptr(childFDs[1]), uintptr(childFDs[2])}
	if err = p.fork(path, argv, env, dir, files, cred); err != nil {
		return nil, err
	}
	go drainInto(p.stdout, p.outR, bufs, p.done)
	go drainInto(p.stderr, p.errR, bufs, p.done)
	if stdinFile != nil {
		p.pending++
		go func() {
			defer func() { p.done <- struct{}{} }()
			// EPIPE (the task did not read it all) is the task's business.
			_, _ = stdinFile.Write(envelope)
			stdinFile.Close()
		}()
	}
	return p, nil
}

// collect waits for p's I/O goroutines and closes its pipes. Normally they
// finish as soon as the group is dead; a descendant that escaped the group
// and holds a pipe open gets outputDrainTimeout.
func (p *process) collect() {
	deadlineSet := false
	for p.pending > 0 {
		select {
		case <-p.done:
			p.pending--
			continue
		default:
		}
		if !deadlineSet {
			deadlineSet = true
			until := time.Now().Add(outputDrainTimeout)
			_ = p.outR.SetReadDeadline(until)
			_ = p.errR.SetReadDeadline(until)
			if p.stdinW != nil {
				_ = p.stdinW.SetWriteDeadline(until)
			}
		}
		<-p.done
		p.pending--
	}
	closeAll(p.outR, p.errR)
}

// pipe returns a close-on-exec pipe with blocking ends.
func pipe() (r, w int, err error) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return -1, -1, err
	}
	return fds[0], fds[1], nil
}

// pollable makes fd non-blocking and wraps it in an *os.File served by the
// runtime poller, so that a goroutine blocked on it holds no thread and
// deadlines work. The child's ends stay blocking, as programs expect.
func pollable(fd int, name string) (*os.File, error) {
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("%s pipe: set non-blocking: %w", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// writeAll writes b to the blocking fd.
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// closeAll closes the non-nil files.
func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}
