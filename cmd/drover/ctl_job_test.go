package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/jobs"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/web"
)

// jobViews are the ways a test reads a job's status: the CLI, the Go
// client (jobs.Lookup) and the HTTP API; every view must give the same
// state.
type jobViews struct {
	c      *cluster
	lookup *jobs.Lookup
	extra  []func(q, id string) (drover.JobStatus, error) // e.g. the HTTP API
}

func newJobViews(c *cluster) *jobViews {
	sess, store := c.session(), c.store()
	v := &jobViews{c: c, lookup: &jobs.Lookup{Store: store.Jobs(), Fleet: jobs.SessionFleet{Session: sess}}}

	// The HTTP API: the console's server as drover web wires it, with a
	// viewer token.
	tok, spec, err := auth.NewToken("reader", auth.Viewer)
	if err != nil {
		c.t.Fatal(err)
	}
	authn, err := auth.New(auth.Config{Tokens: []string{spec}})
	if err != nil {
		c.t.Fatal(err)
	}
	o, err := ops.New(ops.Config{ZK: sess, Store: store})
	if err != nil {
		c.t.Fatal(err)
	}
	srv, err := web.New(web.Config{Ops: o, Store: store, Auth: authn})
	if err != nil {
		c.t.Fatal(err)
	}
	if err := srv.RouteJobs(jobsConfig(sess, store, "")); err != nil {
		c.t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	c.t.Cleanup(hs.Close)
	v.extra = append(v.extra, func(q, id string) (drover.JobStatus, error) {
		req, _ := http.NewRequest("GET", hs.URL+"/api/v1/queues/"+q+"/jobs/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return drover.JobStatus{}, err
		}
		defer resp.Body.Close()
		var st drover.JobStatus
		if resp.StatusCode != http.StatusOK {
			return st, fmt.Errorf("GET %s: %s", req.URL.Path, resp.Status)
		}
		return st, json.NewDecoder(resp.Body).Decode(&st)
	})
	return v
}

// status reads the job through every view; it fails the test when they
// disagree on the state, and returns the CLI's answer.
func (v *jobViews) status(q, id string) drover.JobStatus {
	v.c.t.Helper()
	var cli drover.JobStatus
	v.c.okJSON(&cli, "ctl", "job", q, id)
	if cli.AsOf.IsZero() || cli.ID != id || cli.Queue != q {
		v.c.t.Fatalf("ctl job %s %s: want queue, id and as_of, have %+v", q, id, cli)
	}
	goSt, err := v.lookup.Job(context.Background(), q, id)
	if err != nil {
		v.c.t.Fatalf("jobs.Lookup.Job(%s, %s): %v", q, id, err)
	}
	states := []drover.JobState{cli.State, goSt.State}
	for _, f := range v.extra {
		st, err := f(q, id)
		if err != nil {
			v.c.t.Fatalf("job %s/%s: %v", q, id, err)
		}
		states = append(states, st.State)
	}
	for _, s := range states[1:] {
		if s != states[0] {
			return drover.JobStatus{State: "disagree: " + drover.JobState(fmt.Sprint(states))}
		}
	}
	return cli
}

// waitState polls until the job reads want (in every view) and returns it.
func (v *jobViews) waitState(q, id string, want drover.JobState) drover.JobStatus {
	v.c.t.Helper()
	var st drover.JobStatus
	eventually(v.c.t, 60*time.Second, func() error {
		st = v.status(q, id)
		if st.State != want {
			return fmt.Errorf("job %s/%s: want %s, have %+v", q, id, want, st)
		}
		return nil
	})
	return st
}

// TestJobStatusWalksEveryState runs a real worker and walks one job through
// delayed → pending → running (a real child's pid) → retrying → dead,
// another to succeeded, a revoked one and an expired record, reading each
// through the CLI, the Go client and the HTTP API.
func TestJobStatusWalksEveryState(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	pidFile, goFile := filepath.Join(dir, "pid"), filepath.Join(dir, "go")
	slow := fmt.Sprintf(`slow=/bin/sh -c 'echo $$ > %s; while [ ! -e %s ]; do sleep 0.05; done; echo boom >&2; exit 3'`, pidFile, goFile)
	c.ok("ctl", "queue", "create", "walk", "--max-attempts", "2", "--backoff-base", "1h", "--backoff-max", "2h",
		"--task", slow, "--task", "quick=/bin/true")
	c.ok("ctl", "queue", "create", "fine", "--outcome-stdout", "64", "--task", `*=/bin/echo the result`)
	c.ok("ctl", "queue", "create", "short", "--outcome-retention", "3s", "--task", "*=/bin/true")
	c.startWorker("w1")
	v := newJobViews(c)
	ctx := context.Background()
	st := c.store()

	// Never seen.
	if s := v.status("walk", "nobody"); s.State != drover.JobUnknown {
		t.Fatalf("want unknown for an id never enqueued, have %+v", s)
	}

	// Delayed.
	c.ok("ctl", "pause", "--queue", "walk", "--reason", "job walk")
	c.ok("ctl", "enqueue", "walk", "slow", "--id", "walk-1", "--in", "1h")
	s := v.waitState("walk", "walk-1", drover.JobDelayed)
	if s.DueAt == nil || s.DueAt.Before(time.Now().Add(50*time.Minute)) || s.Task != "slow" {
		t.Fatalf("delayed: want due in about an hour and task slow, have %+v", s)
	}

	// Pending behind one message (the queue is paused).
	c.ok("ctl", "enqueue", "walk", "quick", "--id", "ahead-1")
	if n, _, err := promoteDueNext(ctx, st.Log(), "walk", time.Now().Add(2*time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("promote walk-1: want 1, have %d, %v", n, err)
	}
	s = v.waitState("walk", "walk-1", drover.JobPending)
	if s.Ahead == nil || *s.Ahead != 1 || s.Position == 0 {
		t.Fatalf("pending: want 1 message ahead and a position, have %+v", s)
	}

	// Running, with the child's own pid.
	c.ok("ctl", "resume", "--queue", "walk")
	s = v.waitState("walk", "walk-1", drover.JobRunning)
	var pid int
	eventually(t, 60*time.Second, func() error {
		b, err := os.ReadFile(pidFile)
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			return fmt.Errorf("the task has not written its pid yet (%v)", err)
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err
	})
	s = v.waitState("walk", "walk-1", drover.JobRunning)
	if s.Member != "w1" || s.PID != pid || s.Attempt != 0 || s.StartedAt == nil {
		t.Fatalf("running: want member w1, the child's pid %d, attempt 0 and a start time, have %+v", pid, s)
	}
	if table := c.ok("ctl", "job", "walk", "walk-1").stdout; !contains(table, "running", "w1", strconv.Itoa(pid)) {
		t.Fatalf("ctl job table: want state, member and pid, have:\n%s", table)
	}

	// Retrying: the attempt fails, the next waits an hour.
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s = v.waitState("walk", "walk-1", drover.JobRetrying)
	if s.Attempt != 1 || s.DueAt == nil || s.DueAt.Before(time.Now().Add(30*time.Minute)) ||
		s.ExitCode == nil || *s.ExitCode != 3 || !strings.Contains(s.Error, "3") || !strings.Contains(s.StderrTail, "boom") {
		t.Fatalf("retrying: want attempt 1, next try in about an hour, last error exit 3 with stderr boom, have %+v", s)
	}

	// Dead: the second and last attempt fails too.
	if n, _, err := promoteDueNext(ctx, st.Log(), "walk", time.Now().Add(3*time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("promote the retry: want 1, have %d, %v", n, err)
	}
	s = v.waitState("walk", "walk-1", drover.JobDead)
	if s.ExitCode == nil || *s.ExitCode != 3 || !strings.Contains(s.Error, "max_attempts 2") ||
		!strings.Contains(s.StderrTail, "boom") || s.FinishedAt == nil {
		t.Fatalf("dead: want exit 3, the reason naming max_attempts 2, stderr boom, a time; have %+v", s)
	}

	// Succeeded, with its record: exit code, duration, stdout.
	var enq struct {
		ID string `json:"id"`
	}
	c.okJSON(&enq, "ctl", "enqueue", "fine", "t")
	s = v.waitState("fine", enq.ID, drover.JobSucceeded)
	if s.ExitCode == nil || *s.ExitCode != 0 || s.Member != "w1" || s.FinishedAt == nil || s.StdoutTail != "the result\n" {
		t.Fatalf("succeeded: want exit 0 by w1 with a finish time and stdout, have %+v", s)
	}
	// ahead-1 ran too (its queue keeps records by default).
	v.waitState("walk", "ahead-1", drover.JobSucceeded)

	// Revoked.
	c.ok("ctl", "enqueue", "fine", "t", "--id", "later", "--in", "1h")
	c.ok("ctl", "revoke", "fine", "later")
	if s = v.waitState("fine", "later", drover.JobRevoked); s.By == "" || s.FinishedAt == nil {
		t.Fatalf("revoked: want who and when, have %+v", s)
	}

	// A record that expired reads unknown. The queue keeps records for 3s;
	// the store (one round trip) sees the record first, so the test knows
	// the record existed and is not just missing.
	c.ok("ctl", "enqueue", "short", "t", "--id", "brief")
	eventually(t, 60*time.Second, func() error {
		js, err := st.Jobs().JobStatus(ctx, "short", "brief", 0)
		if err != nil || js.State != drover.JobSucceeded {
			return fmt.Errorf("want brief's record read as succeeded, have %+v (%v)", js, err)
		}
		return nil
	})
	v.waitState("short", "brief", drover.JobUnknown)
}

// promoteDueNext promotes one queue through Log.PromoteMany.
func promoteDueNext(ctx context.Context, l queue.Log, q string, now time.Time, limit int) (int, time.Time, error) {
	r := l.PromoteMany(ctx, []drover.PromoteRequest{{Queue: q, Now: now, Limit: limit}})[0]
	return r.Moved, r.Next, r.Err
}
