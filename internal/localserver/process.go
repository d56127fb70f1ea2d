// Package localserver starts private Redis and ZooKeeper servers from the
// binaries installed on the machine (Debian's redis-server and zookeeper
// packages), on free loopback ports in a directory of the caller's. It serves
// the tests (internal/testenv) and `drover dev`.
package localserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one server process that can be stopped and started again with
// the same command line (same port, same data directory).
type Process struct {
	name    string   // for messages: "redis 127.0.0.1:6379"
	argv    []string // command line
	dir     string   // working and data directory
	logPath string
	ready   func() error // returns nil once the server answers

	mu  sync.Mutex
	cmd *exec.Cmd
	// exited is closed when the current cmd has been reaped.
	exited chan struct{}
}

// startTimeout bounds how long a server may take to answer after start.
const startTimeout = 60 * time.Second

// Start launches the process and waits until ready answers.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.name)
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: open log: %w", p.name, err)
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group (so SIGSTOP reaches a JVM's threads alike) and a
	// parent-death signal, so the server dies with the test binary even
	// when `go test` kills it on a timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%s: start %s: %w", p.name, p.argv[0], err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited

	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			p.cmd = nil
			return fmt.Errorf("%s: exited during start-up; log %s:\n%s", p.name, p.logPath, tail(p.logPath, 2000))
		default:
		}
		err := p.ready()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			p.killLocked()
			return fmt.Errorf("%s: not ready after %s (%v); log %s:\n%s", p.name, startTimeout, err, p.logPath, tail(p.logPath, 2000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop sends SIGTERM and waits for the process to exit (SIGKILL after 10 s).
func (p *Process) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT) // a paused server cannot exit
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
	p.cmd = nil
	return nil
}

// Kill sends SIGKILL to the process group and waits for it.
func (p *Process) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killLocked()
}

func (p *Process) killLocked() {
	if p.cmd == nil {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
	p.cmd = nil
}

// Signal sends sig to the process group.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%s: not running", p.name)
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("%s: send %v: %w", p.name, sig, err)
	}
	return nil
}

// PID returns the server's process id, or 0 when it is not running.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freePorts returns n distinct free ports.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// lookBinary finds a server binary on PATH or at one of the fixed paths.
func lookBinary(name string, paths ...string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, ErrNotInstalled)
}

// ErrNotInstalled: a server binary is missing.
var ErrNotInstalled = errors.New("not installed")

// tail returns up to n bytes from the end of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// ask sends a one-line command to addr and returns the whole reply (used for
// Redis PING and ZooKeeper's four-letter words).
func ask(addr, command string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte(command)); err != nil {
		return "", err
	}
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
		// Redis keeps the connection open: one reply line is enough.
		if strings.HasPrefix(sb.String(), "+") || strings.HasPrefix(sb.String(), "-") {
			if strings.Contains(sb.String(), "\r\n") {
				break
			}
		}
	}
	return sb.String(), nil
}

func join(dir, name string) string { return filepath.Join(dir, name) }
