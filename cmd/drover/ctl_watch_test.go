package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func TestCtlStatusWatchRedrawsUntilInterrupted(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "watched")
	cmd := exec.Command(droverBin, "ctl", "status", "--watch", "--interval", "200ms")
	cmd.Env = c.env
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	wait := func(what string, cond func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond(out.String()) {
			if time.Now().After(deadline) {
				t.Fatalf("gave up waiting for %s; output:\n%s", what, out.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	wait("a first frame", func(s string) bool { return strings.Contains(s, "watched") })
	if _, err := c.store().Producer().Enqueue(context.Background(), &drover.Message{Queue: "watched", Task: "t"}); err != nil {
		t.Fatal(err)
	}
	// A later frame shows the new lag: the status is read again each time.
	wait("a frame with lag 1", func(s string) bool {
		frames := strings.Split(s, "\x1b[H\x1b[2J")
		last := frames[len(frames)-1]
		for _, line := range strings.Split(last, "\n") {
			if f := strings.Fields(line); len(f) > 4 && f[0] == "watched" && f[4] == "1" {
				return true
			}
		}
		return false
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("status --watch after SIGINT: want exit 0, have %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("status --watch did not stop after SIGINT")
	}
}
