package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDevConsoleOutlivesAZooKeeperFreeze: the console `drover dev` prints
// keeps serving while dev's own ZooKeeper is frozen (SIGSTOP) for 2.5 of
// dev's 6 s session timeouts: every HTTP enqueue succeeds, a page that
// needs ZooKeeper answers 200 or 503 naming it, and after the thaw the
// console answers /readyz and its pages again at the same URL.
func TestDevConsoleOutlivesAZooKeeperFreeze(t *testing.T) {
	d := startDev(t, 1)
	stdout, stderr, dataDir := d.stdout, d.stderr, d.dataDir
	var zkPid int
	defer func() { // before startDev's stop (a Cleanup)
		if zkPid != 0 {
			syscall.Kill(zkPid, syscall.SIGCONT)
		}
	}()
	m := regexp.MustCompile(`Web console: (http://\S+?)/?\n`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no web console URL in the banner:\n%s", stdout)
	}
	base := m[1]
	zks := processesMentioning(t, filepath.Join(dataDir, "zookeeper"))
	if len(zks) != 1 {
		t.Fatalf("want dev's one ZooKeeper process, have %q", zks)
	}
	pid, err := strconv.Atoi(strings.SplitN(zks[0], ":", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	if st, b := webCall("POST", base+"/api/v1/queues/hello/jobs", `{"task":"greet","args":{"who":"before"}}`); st != http.StatusCreated {
		t.Fatalf("enqueue before the freeze: want 201, have %d %s", st, b)
	}

	const sessionTimeout = 6 * time.Second // dev's zookeeper.session_timeout
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	zkPid = pid
	frozen := time.Now()
	saw503 := false
	// The fault lasts 2.5 session timeouts, and on until a page that needs
	// ZooKeeper has answered 503 (bounded): a loaded machine notices the
	// frozen server late, and the fault then lasts longer.
	for n := 1; time.Since(frozen) < 5*sessionTimeout/2 || !saw503 && time.Since(frozen) < 90*time.Second; n++ {
		if st, b := webCall("POST", base+"/api/v1/queues/hello/jobs", fmt.Sprintf(`{"task":"greet","args":{"who":"during-%d"}}`, n)); st != http.StatusCreated {
			t.Fatalf("enqueue %d during the freeze (%v in): want 201, have %d %s", n, time.Since(frozen).Round(time.Millisecond), st, b)
		}
		st, b := webCall("GET", base+"/api/v1/queues", "")
		switch {
		case st == http.StatusServiceUnavailable && strings.Contains(b, "ZooKeeper"):
			saw503 = true
		case st == http.StatusOK:
		default:
			t.Fatalf("a page that needs ZooKeeper during the freeze: want 200 or 503 naming ZooKeeper, have %d %s", st, b)
		}
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	zkPid = 0
	if !saw503 {
		t.Error("no page that needs ZooKeeper answered 503 naming it during the freeze")
	}
	eventually(t, 90*time.Second, func() error {
		st1, _ := webCall("GET", base+"/readyz", "")
		st2, b := webCall("GET", base+"/api/v1/queues", "")
		if st1 != http.StatusOK || st2 != http.StatusOK || !strings.Contains(b, `"hello"`) {
			return fmt.Errorf("after the thaw: /readyz %d, queues page %d %.200s", st1, st2, b)
		}
		return nil
	})
	if strings.Contains(stderr.String(), "web console stopped") {
		t.Errorf("the console stopped during the freeze (dev restarted it): %s", stderr)
	}
}
