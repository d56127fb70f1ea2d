package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDevReportsAChildThatDiesAtOnce: of two children, the one that exits
// while the other runs is delivered on died before anything is stopped,
// and its report names it, says how it ended and quotes its log's last
// lines.
func TestDevReportsAChildThatDiesAtOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := newApp(strings.NewReader(""), io.Discard, io.Discard, []string{"PATH=" + os.Getenv("PATH")})
	fl := newFleet()
	defer fl.stop(io.Discard)
	if err := fl.start(a, "/bin/sh", dir, "worker-1", "", false, "-c", "exec sleep 600"); err != nil {
		t.Fatal(err)
	}
	if err := fl.start(a, "/bin/sh", dir, "worker-2", "", false, "-c", "echo starting; echo 'worker.admin_addr: listen: address already in use'; exit 3"); err != nil {
		t.Fatal(err)
	}
	fl.watch()
	select {
	case c := <-fl.died:
		r := c.report()
		for _, want := range []string{"dev: worker-2", "exit status 3", "worker-2.log", "  starting\n", "address already in use"} {
			if !strings.Contains(r, want) {
				t.Errorf("want the report to hold %q, have:\n%s", want, r)
			}
		}
		if again := c.report(); again != "" {
			t.Errorf("want one report per child, have a second:\n%s", again)
		}
	case <-fl.allExited:
		t.Fatal("want worker-2 reported while worker-1 runs, have every child exited")
	case <-time.After(time.Minute):
		t.Fatal("worker-2 was not reported within a minute of exiting")
	}
	fl.stop(io.Discard)
	select {
	case c := <-fl.died:
		t.Fatalf("want no report for a child stopped by stop, have %s", c.name)
	default:
	}
}
