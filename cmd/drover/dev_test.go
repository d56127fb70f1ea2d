package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// processesMentioning lists the pids of processes whose command line holds s.
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(s)) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat")); err == nil && strings.Contains(string(stat), ") Z ") {
			continue // a zombie is already dead; its parent reaps it
		}
		pids = append(pids, d.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return pids
}

// TestDevRunsAFleetAndStopsCleanly starts `drover dev`, enqueues work with
// ctl through the printed DROVER_CONFIG, sees it processed, stops dev with
// SIGINT and checks that no process it started is left.
func TestDevRunsAFleetAndStopsCleanly(t *testing.T) {
	d := startDev(t, 2)
	stdout, dataDir := d.stdout, d.dataDir
	cfgPath := filepath.Join(dataDir, "drover.hcl")
	if !strings.Contains(stdout.String(), "export DROVER_CONFIG="+cfgPath) {
		t.Fatalf("want the banner to say how to connect, have:\n%s", stdout)
	}

	// Every child has its own free admin port (the scheduler used to bind
	// the fixed 127.0.0.1:9090 and die when anything else held it), and
	// the banner lists it.
	admins := regexp.MustCompile(`(?m)^  (\S+)\s+pid \d+\s+admin http://(\S+?)(/\S*)$`).FindAllStringSubmatch(stdout.String(), -1)
	if len(admins) != 3 {
		t.Fatalf("want 3 children with an admin address in the banner, have %d:\n%s", len(admins), stdout)
	}
	for _, m := range admins {
		if strings.HasSuffix(m[2], ":9090") || strings.HasSuffix(m[2], ":9091") {
			t.Errorf("%s: want a free port, have the default %s", m[1], m[2])
		}
		eventually(t, 60*time.Second, func() error {
			resp, err := http.Get("http://" + m[2] + "/healthz")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s /healthz: %s", m[1], resp.Status)
			}
			return nil
		})
	}

	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "DROVER_CONFIG=" + cfgPath}
	ctl := func(args ...string) result { return runDrover(t, env, "", args...) }
	var res struct {
		ID       string `json:"id"`
		Position int64  `json:"position"`
	}
	r := ctl("ctl", "enqueue", "hello", "greet", "--args", `{"who":"dev test"}`, "-o", "json")
	if r.code != 0 {
		t.Fatalf("want exit 0, have:\n%s", r)
	}
	if err := jsonUnmarshal(r.stdout, &res); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, func() error {
		var offs []offsetReport
		r := ctl("ctl", "offsets", "show", "hello", "-o", "json")
		if err := jsonUnmarshal(r.stdout, &offs); err != nil || len(offs) != 1 {
			return fmt.Errorf("offsets show: %v\n%s", err, r)
		}
		if int64(offs[0].Position) < res.Position {
			return fmt.Errorf("hello committed %d, want ≥ %d", offs[0].Position, res.Position)
		}
		return nil
	})
	// The committed offset passed it and nothing was dead-lettered: the
	// example task succeeded.
	var st statusReport
	if r := ctl("ctl", "status", "-o", "json"); jsonUnmarshal(r.stdout, &st) != nil {
		t.Fatalf("status: %s", r)
	}
	for _, q := range st.Queues {
		if q.Queue == "hello" && (q.Dead != 0 || q.Owner == "") {
			t.Fatalf("want hello owned with no dead letters, have %+v", q)
		}
	}
	// The scheduler child may still be starting on a loaded machine.
	eventually(t, 60*time.Second, func() error {
		var rep statusReport
		if r := ctl("ctl", "status", "-o", "json"); jsonUnmarshal(r.stdout, &rep) != nil || len(rep.Members) != 2 || rep.SchedulerLeader != "scheduler-1" {
			return fmt.Errorf("want 2 members and scheduler-1 leading, have:\n%s", r)
		}
		return nil
	})

	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		d.done <- err
		if err != nil {
			t.Fatalf("want dev to exit 0 after SIGINT, have %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("dev did not stop within 90s of SIGINT")
	}
	if left := processesMentioning(t, dataDir); len(left) > 0 {
		t.Fatalf("want no process left behind, have:\n%s", strings.Join(left, "\n"))
	}
}
