package worker

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/worker/executor"
)

// cancellable runs each message's first attempt until it is cancelled
// (Task.Cancel) and reports OutcomeCancelled; later attempts succeed.
type cancellable struct {
	mu   sync.Mutex
	runs []string
}

func (e *cancellable) Execute(ctx context.Context, t *executor.Task) executor.Result {
	e.mu.Lock()
	e.runs = append(e.runs, t.Message.ID+"#"+string(rune('0'+t.Message.Attempt)))
	e.mu.Unlock()
	if t.Message.Attempt > 0 {
		return executor.Result{Outcome: executor.OutcomeSuccess}
	}
	if t.OnStart != nil {
		t.OnStart(4242)
	}
	select {
	case <-t.Cancel:
		return executor.Result{Outcome: executor.OutcomeCancelled, ExitCode: -1, Reason: "cancelled: sent SIGTERM to its process group"}
	case <-ctx.Done():
		return executor.Result{Outcome: executor.OutcomeAborted, ExitCode: -1, Reason: "aborted"}
	}
}

func (e *cancellable) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.runs...)
}

// What follows a cancel, by the operator's choice and the queue's
// configuration: dead-lettered with who cancelled, retried at once, or
// (ordered with on_failure park) parked at the message.
func TestCancelThenDeadLettersRetriesOrParks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ordered bool
		park    bool
		then    CancelThen
		want    string // dead, retry, park
	}{
		{"default dead-letters", false, false, CancelDefault, "dead"},
		{"retry on an unordered queue", false, false, CancelRetry, "retry"},
		{"retry in place on an ordered queue", true, false, CancelRetry, "retry"},
		{"park asked where the queue cannot park", false, false, CancelPark, "dead"},
		{"default on a parking queue parks", true, true, CancelDefault, "park"},
		{"dead asked on a parking queue", true, true, CancelDead, "dead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := newMemLog()
			log.add("q", msg("a"))
			ex := &cancellable{}
			pz := &memPauser{}
			w := newTestWorker(t, log, ex, func(c *Config) { c.Pauser = pz })
			qc := queueConfig("q", func(qc *drover.QueueConfig) {
				qc.Ordered = tc.ordered
				if tc.ordered {
					qc.Concurrency = 0
				}
				if tc.park {
					qc.OnFailure = drover.OnFailurePark
				}
			})
			if err := w.Start(qc, &memClaim{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "a to run", func() bool { _, ok := w.Job("q", "a"); return ok })
			if _, err := w.Cancel("q", "nobody", "alice", tc.then); !errors.Is(err, ErrNotRunningHere) {
				t.Fatalf("cancel of a message not running: want ErrNotRunningHere, have %v", err)
			}
			ts, err := w.Cancel("q", "a", "alice", tc.then)
			if err != nil || ts.CancelledBy != "alice" || ts.PID != 4242 {
				t.Fatalf("cancel: want the task with pid 4242 cancelled by alice, have %+v, %v", ts, err)
			}
			switch tc.want {
			case "dead":
				waitFor(t, "the dead letter", func() bool { log.mu.Lock(); defer log.mu.Unlock(); return len(log.dead["q"]) == 1 })
				log.mu.Lock()
				f := log.dead["q"][0].Failure
				log.mu.Unlock()
				if f.CancelledBy != "alice" || !strings.HasPrefix(f.Reason, "cancelled by alice (dead-lettered): sent SIGTERM") {
					t.Fatalf("dead letter: want cancelled by alice, have %+v", f)
				}
			case "retry":
				if tc.ordered {
					waitFor(t, "the retry in place", func() bool { return len(ex.list()) == 2 })
				} else {
					waitFor(t, "the retry", func() bool { return log.retryCount() == 1 })
				}
			case "park":
				waitFor(t, "the park", func() bool { return len(pz.list()) == 1 })
				if p := pz.list()[0]; p.Head == nil || p.Head.ID != "a" || !strings.Contains(p.Reason, "cancelled by alice (queue parked)") {
					t.Fatalf("park: want the head a, cancelled by alice, have %+v", p)
				}
			}
			if tc.want != "dead" {
				log.mu.Lock()
				n := len(log.dead["q"])
				log.mu.Unlock()
				if n != 0 {
					t.Fatalf("want no dead letter, have %d", n)
				}
			}
		})
	}
}

// POST /debug/cancel: 404 for a message that does not run here, 400 for a
// bad then, 403 for a foreign Host or a cross-site browser request; GET is
// not a cancel.
func TestAdminCancelEndpointRefusals(t *testing.T) {
	w := newTestWorker(t, newMemLog(), &scriptedExecutor{}, nil)
	h := w.AdminHandler(AdminConfig{})
	do := func(method, path, host string, hdr map[string]string) (int, string) {
		req := httptest.NewRequest(method, path, nil)
		req.RemoteAddr, req.Host = "127.0.0.1:1", host
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for _, tc := range []struct {
		method, path, host string
		hdr                map[string]string
		want               int
	}{
		{"POST", "/debug/cancel?queue=q&id=x", "127.0.0.1:9090", nil, http.StatusNotFound},
		{"POST", "/debug/cancel?queue=q&id=x&then=later", "127.0.0.1:9090", nil, http.StatusBadRequest},
		{"POST", "/debug/cancel?queue=q", "127.0.0.1:9090", nil, http.StatusBadRequest},
		{"POST", "/debug/cancel?queue=q&id=x", "evil.example:9090", nil, http.StatusForbidden},
		{"POST", "/debug/cancel?queue=q&id=x", "127.0.0.1:9090", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"GET", "/debug/cancel?queue=q&id=x", "127.0.0.1:9090", nil, http.StatusMethodNotAllowed},
	} {
		if st, body := do(tc.method, tc.path, tc.host, tc.hdr); st != tc.want {
			t.Errorf("%s %s Host %s %v: want %d, have %d (%s)", tc.method, tc.path, tc.host, tc.hdr, tc.want, st, body)
		}
	}
}
