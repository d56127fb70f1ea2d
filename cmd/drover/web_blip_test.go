package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// startWeb runs runWeb in this process on c's servers until the test ends
// and returns the console's URL.
func startWeb(t *testing.T, c *cluster) string {
	t.Helper()
	u, _ := startWebWith(t, c)
	return u
}

// startWebWith runs runWeb in this process on c's servers, with the extra
// environment entries env, and returns the console's URL and a function
// that stops it (called when the test ends, if not before).
func startWebWith(t *testing.T, c *cluster, env ...string) (string, func()) {
	t.Helper()
	env = append(append(append([]string(nil), c.env...), "DROVER_WEB_ADDR=127.0.0.1:0", "DROVER_LOG_LEVEL=warn"), env...)
	cfg, err := config.Load("", env, nil, "web-test")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- runWeb(ctx, cfg, io.Discard, func(u string) { urls <- u }) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("runWeb: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case u := <-urls:
		return strings.TrimSuffix(u, "/"), stop
	case err := <-done:
		done <- err
		t.Fatalf("runWeb ended before listening: %v", err)
	}
	return "", stop
}

// webCall sends method url (body "" for none) and returns the status and
// the body; a transport error is status 0 with the error as body.
func webCall(method, url, body string) (int, string) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestWebOutlivesAZooKeeperFreeze: ZooKeeper frozen (SIGSTOP) for longer
// than twice the session timeout, so that the console's session expires.
// Throughout, drover web keeps serving: every HTTP enqueue succeeds, a job's
// status answers, the pages that need ZooKeeper answer 503 naming it; after
// the thaw, /readyz and those pages recover on a new session.
func TestWebOutlivesAZooKeeperFreeze(t *testing.T) {
	c := newCluster(t)
	zk := testenv.NewZooKeeper(t)
	c.zk = zk.Addrs
	for i, e := range c.env {
		if strings.HasPrefix(e, "DROVER_ZOOKEEPER_SERVERS=") {
			c.env[i] = "DROVER_ZOOKEEPER_SERVERS=" + strings.Join(c.zk, ",")
		}
	}
	const sessionTimeout = 4 * time.Second // newCluster's
	s := c.session()
	if err := s.Queues().Create(context.Background(), drover.QueueConfig{Name: "zq", Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}); err != nil {
		t.Fatal(err)
	}
	base := startWeb(t, c)
	if st, b := webCall("POST", base+"/api/v1/queues/zq/jobs", `{"task":"t","id":"before"}`); st != http.StatusCreated {
		t.Fatalf("enqueue before the freeze: want 201, have %d %s", st, b)
	}

	zk.Pause(t)
	frozen := time.Now()
	thawed := false
	defer func() {
		if !thawed {
			zk.Resume(t)
		}
	}()
	var saw503 bool
	n := 0
	// The fault lasts 2.5 session timeouts, and on until a page that needs
	// ZooKeeper has answered 503 (a loaded machine notices the frozen
	// server late: the fault then lasts longer, the test does not fail on
	// a deadline); enqueues and pages go on meanwhile.
	for time.Since(frozen) < 5*sessionTimeout/2 || !saw503 && time.Since(frozen) < testkit.Bound {
		n++
		if st, b := webCall("POST", base+"/api/v1/queues/zq/jobs", fmt.Sprintf(`{"task":"t","id":"during-%d"}`, n)); st != http.StatusCreated {
			t.Fatalf("enqueue %d during the freeze (%v in): want 201, have %d %s", n, time.Since(frozen).Round(time.Millisecond), st, b)
		}
		if st, b := webCall("GET", base+"/api/v1/queues/zq/jobs/before", ""); st != http.StatusOK {
			t.Fatalf("job status during the freeze: want 200, have %d %s", st, b)
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
	if !saw503 {
		t.Error("no page that needs ZooKeeper answered 503 naming it during the freeze")
	}
	if st, _ := webCall("GET", base+"/readyz", ""); st != http.StatusServiceUnavailable {
		t.Errorf("/readyz during the freeze: want 503, have %d", st)
	}
	zk.Resume(t)
	thawed = true

	deadline := time.Now().Add(90 * time.Second)
	for {
		st1, _ := webCall("GET", base+"/readyz", "")
		st2, b := webCall("GET", base+"/api/v1/queues", "")
		if st1 == http.StatusOK && st2 == http.StatusOK && strings.Contains(b, `"zq"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the thaw: want /readyz 200 and the queues page 200, have %d and %d %s", st1, st2, b)
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
	if st, b := webCall("POST", base+"/api/v1/queues/zq/jobs", `{"task":"t","id":"after"}`); st != http.StatusCreated {
		t.Fatalf("enqueue after the thaw: want 201, have %d %s", st, b)
	}
}

// TestWebAnswers503NamingRedisWhenRedisIsFrozen: with Redis frozen,
// /readyz answers 503 and a page answers 503 naming Redis within the
// request bound, not after every command's timeout; both recover after.
func TestWebAnswers503NamingRedisWhenRedisIsFrozen(t *testing.T) {
	c := newCluster(t)
	rds := testenv.NewRedis(t, testenv.RedisOptions{})
	c.redis = rds.Addr
	for i, e := range c.env {
		if strings.HasPrefix(e, "DROVER_REDIS_ADDRS=") {
			c.env[i] = "DROVER_REDIS_ADDRS=" + c.redis
		}
	}
	base := startWeb(t, c)
	if st, b := webCall("GET", base+"/readyz", ""); st != http.StatusOK {
		t.Fatalf("/readyz: want 200, have %d %s", st, b)
	}
	rds.Pause(t)
	if st, b := webCall("GET", base+"/readyz", ""); st != http.StatusServiceUnavailable || !strings.Contains(b, "Redis") {
		t.Errorf("/readyz with Redis frozen: want 503 naming Redis, have %d %s", st, b)
	}
	if st, b := webCall("GET", base+"/api/v1/queues", ""); st != http.StatusServiceUnavailable || !strings.Contains(b, "Redis") {
		t.Errorf("a page with Redis frozen: want 503 naming Redis, have %d %s", st, b)
	}
	rds.Resume(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _ := webCall("GET", base+"/readyz", "")
		if st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz after the thaw: want 200, have %d", st)
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
}

// TestWorkerReadinessPingsRedis: the workers' /readyz check (readyWithRedis)
// fails, naming Redis, while Redis is frozen, and passes again after.
func TestWorkerReadinessPingsRedis(t *testing.T) {
	c := newCluster(t)
	rds := testenv.NewRedis(t, testenv.RedisOptions{})
	c.redis = rds.Addr
	st := c.store()
	zkOK := func() error { return nil }
	if err := readyWithRedis(zkOK, st.Ping); err != nil {
		t.Fatalf("ready with Redis up: %v", err)
	}
	rds.Pause(t)
	err := readyWithRedis(zkOK, st.Ping)
	rds.Resume(t)
	if err == nil || !strings.Contains(err.Error(), "Redis") {
		t.Fatalf("ready with Redis frozen: want an error naming Redis, have %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for readyWithRedis(zkOK, st.Ping) != nil {
		if time.Now().After(deadline) {
			t.Fatal("ready after the thaw: still failing")
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
}
