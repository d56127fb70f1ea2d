// Package localserver starts private Redis and ZooKeeper servers from the
// binaries installed on the machine (Debian's redis-server and zookeeper
// packages), on free loopback ports in a directory of the caller's. It serves
// the tests (internal/testing/testenv) and `drover dev`.
package localserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	// port is the TCP port the server listens on (0: not checked). A
	// server counts as ready only once the answering listener is its own.
	port int
	// StartTimeout bounds how long Start waits for the server to answer
	// (0: startTimeout). The chaos run gives an ensemble member it
	// restarts longer: on a host its load saturates, the JVM's start alone
	// took over half a minute.
	StartTimeout time.Duration

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

	bound := startTimeout
	if p.StartTimeout > 0 {
		bound = p.StartTimeout
	}
	deadline := time.Now().Add(bound)
	foreign := false // another process answered on the port
	for {
		select {
		case <-exited:
			p.cmd = nil
			log := tail(p.logPath, 2000)
			if foreign || strings.Contains(log, "Address already in use") {
				return fmt.Errorf("%s: %w; log %s:\n%s", p.name, errPortTaken, p.logPath, log)
			}
			return fmt.Errorf("%s: exited during start-up; log %s:\n%s", p.name, p.logPath, log)
		default:
		}
		err := p.ready()
		if err == nil {
			// Something answers; it must be this server and not another
			// process that took the port between its pick and this start
			// (which leaves this server unable to listen: it exits).
			own, oerr := p.port == 0, error(nil)
			if !own {
				own, oerr = listensOn(cmd.Process.Pid, p.port)
			}
			if own {
				return nil
			}
			foreign = true
			err = fmt.Errorf("port %d answered by another process (%v)", p.port, oerr)
		}
		if time.Now().After(deadline) {
			p.killLocked()
			if foreign {
				return fmt.Errorf("%s: %w", p.name, errPortTaken)
			}
			return fmt.Errorf("%s: not ready after %s (%v); log %s:\n%s", p.name, bound, err, p.logPath, tail(p.logPath, 2000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// errPortTaken: another process listens on the port a server was to use.
var errPortTaken = errors.New("its port is taken by another process")

// listensOn reports whether process pid holds a TCP socket listening on
// port: the listeners' socket inodes from /proc/net/tcp and tcp6, matched
// against the process's open files.
func listensOn(pid, port int) (bool, error) {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) { // no IPv6
				continue
			}
			return false, err
		}
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			if n, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(n) == port {
				inodes["socket:["+f[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return false, nil
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, fd := range fds {
		if target, err := os.Readlink(dir + "/" + fd.Name()); err == nil && inodes[target] {
			return true, nil
		}
	}
	return false, nil
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

// portAttempts bounds how many times a server is started on fresh ports
// when another process took the ones picked for it.
const portAttempts = 3

// onFreePorts calls start with n distinct ports that were free a moment
// ago. A port picked free can be taken by another process before the server
// listens on it (parallel test runs, `drover dev`): when start reports
// errPortTaken it is called again with fresh ports.
func onFreePorts(n int, start func(ports []int) error) error {
	var err error
	for i := 0; i < portAttempts; i++ {
		ports, perr := pickPorts(n)
		if perr != nil {
			return perr
		}
		if err = start(ports); !errors.Is(err, errPortTaken) {
			return err
		}
	}
	return fmt.Errorf("%w (tried %d sets of free ports)", err, portAttempts)
}

// pickPorts picks the ports; a variable so that a test can hand out a
// taken one.
var pickPorts = freePorts

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
