package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// devProcess is a `drover dev` a test started, up (its banner printed).
type devProcess struct {
	cmd            *exec.Cmd
	dataDir        string
	stdout, stderr *syncBuffer
	done           chan error // cmd.Wait's result; a reader puts it back
}

// startDev starts `drover dev --workers n` on a private data directory and
// waits for its banner (2 minutes at most). When the test ends, a dev still
// running gets SIGINT, then SIGKILL after a minute; its output is logged
// when the test failed or dev had to be killed.
func startDev(t *testing.T, workers int) *devProcess {
	t.Helper()
	d := &devProcess{dataDir: filepath.Join(t.TempDir(), "devdata"), stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan error, 1)}
	d.cmd = exec.Command(droverBin, "dev", "--workers", strconv.Itoa(workers), "--data-dir", d.dataDir)
	d.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	pr, pw := io.Pipe()
	d.cmd.Stdout, d.cmd.Stderr = io.MultiWriter(d.stdout, pw), d.stderr
	// Wait returns this long after dev exits even when a process it left
	// behind still holds its output: a CI run hung 16 minutes in Wait after
	// dev was killed, with nothing to say what held it.
	d.cmd.WaitDelay = 30 * time.Second
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait(); pw.Close() }()
	t.Cleanup(func() { d.stop(t) })
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Ctrl-C stops everything") {
				close(up)
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case <-up:
	case err := <-d.done:
		d.done <- err
		t.Fatalf("dev exited before it was up: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("dev was not up within 2 minutes")
	}
	return d
}

// stop stops dev if it runs: SIGINT, and SIGKILL a minute later, saying
// which of its processes were left then. (The test that asserts a clean
// stop is TestDevRunsAFleetAndStopsCleanly; here a slow stop on a loaded
// machine is logged, not failed.)
func (d *devProcess) stop(t *testing.T) {
	killed := false
	select {
	case err := <-d.done:
		d.done <- err
	default:
		d.cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-d.done:
			d.done <- err
		case <-time.After(time.Minute):
			killed = true
			t.Logf("dev did not stop within a minute of SIGINT; killing it. Its processes then:\n%s", strings.Join(processesMentioning(t, d.dataDir), "\n"))
			d.cmd.Process.Kill()
			d.done <- <-d.done
		}
	}
	if t.Failed() || killed {
		t.Logf("dev stdout:\n%s\ndev stderr:\n%s", d.stdout, d.stderr)
	}
}
