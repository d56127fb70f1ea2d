package jobs

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

type fakeStore struct {
	st     drover.JobStatus
	offset drover.Position // the offset it was asked with
}

func (f *fakeStore) JobStatus(_ context.Context, q, id string, off drover.Position) (drover.JobStatus, error) {
	f.offset = off
	st := f.st
	st.Queue, st.ID = q, id
	return st, nil
}

type fakeFleet struct {
	owner Owner
	pause *drover.Pause
}

func (f fakeFleet) QueueOwner(context.Context, string) (Owner, error) { return f.owner, nil }
func (f fakeFleet) QueuePause(context.Context, string) (*drover.Pause, error) {
	return f.pause, nil
}

// The owner is asked only when Redis says pending; its answer makes the job
// running, a 404 leaves it pending, silence leaves it pending with a note.
func TestLookupAsksTheOwnerOnlyForPendingJobs(t *testing.T) {
	var asked int
	var gotAuth string
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked++
		gotAuth = r.Header.Get("Authorization")
		if r.URL.Path != "/debug/job" || r.URL.Query().Get("queue") != "q" {
			t.Errorf("want GET /debug/job?queue=q&id=…, have %s", r.URL)
		}
		if r.URL.Query().Get("id") != "run" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"member":"w1","queue":"q","task":{"id":"run","task":"t","attempt":2,"pid":4242,"started":"2030-01-01T00:00:00Z"}}`))
	}))
	defer owner.Close()
	addr := strings.TrimPrefix(owner.URL, "http://")
	store := &fakeStore{st: drover.JobStatus{State: drover.JobPending}}
	l := &Lookup{Store: store, Fleet: fakeFleet{owner: Owner{Member: "w1", AdminAddr: addr, Offset: 77}}, Token: "tok"}
	ctx := context.Background()

	st, err := l.Job(ctx, "q", "run")
	if err != nil || st.State != drover.JobRunning || st.PID != 4242 || st.Member != "w1" || st.Attempt != 2 || st.StartedAt == nil {
		t.Fatalf("running job: want running on w1 with pid 4242 at attempt 2, have %+v, %v", st, err)
	}
	if store.offset != 77 || gotAuth != "Bearer tok" {
		t.Fatalf("want the store asked after offset 77 and the token sent, have offset %d, auth %q", store.offset, gotAuth)
	}
	if st, _ := l.Job(ctx, "q", "waiting"); st.State != drover.JobPending || st.Note != "" {
		t.Fatalf("owner does not run it: want pending without a note, have %+v", st)
	}
	before := asked
	store.st.State = drover.JobDead
	if st, _ := l.Job(ctx, "q", "run"); st.State != drover.JobDead || asked != before {
		t.Fatalf("dead job: want dead without asking the owner, have %+v (asked %d times more)", st, asked-before)
	}
	store.st.State = drover.JobPending
	owner.Close()
	if st, err := l.Job(ctx, "q", "run"); err != nil || st.State != drover.JobPending || !strings.Contains(st.Note, "did not answer") {
		t.Fatalf("silent owner: want pending with a note, have %+v, %v", st, err)
	}
}

// A pending message its queue's pause flag names as the parked head reads
// parked, with the head's attempts and error and, when a cancel parked it,
// who cancelled; the owner is not asked. Another pending message of the
// parked queue, or of a queue paused without a head, stays pending.
func TestLookupSaysParkedForTheHeadItsQueueIsParkedAt(t *testing.T) {
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the owner was asked about %s", r.URL)
		http.NotFound(w, r)
	}))
	defer owner.Close()
	addr := strings.TrimPrefix(owner.URL, "http://")
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	pos := int64(7)
	for _, tc := range []struct {
		name  string
		pause *drover.Pause
		id    string
		want  drover.JobStatus
	}{
		{"used its attempts", &drover.Pause{By: "worker w1", At: at, Head: &drover.ParkedHead{ID: "h", Task: "t", Attempts: 3, Error: "exit status 1 (attempt 2, the last of max_attempts 3)", ExitCode: 1}},
			"h", drover.JobStatus{State: drover.JobParked, Task: "t", Attempt: 2, Error: "exit status 1 (attempt 2, the last of max_attempts 3)"}},
		{"cancelled", &drover.Pause{By: "worker w1", At: at, Head: &drover.ParkedHead{ID: "h", Task: "t", Attempts: 1, Error: "cancelled by ann@box (queue parked): signal: terminated", ExitCode: -1}},
			"h", drover.JobStatus{State: drover.JobParked, Task: "t", Attempt: 0, Error: "cancelled by ann@box (queue parked): signal: terminated", By: "ann@box"}},
		{"behind the head", &drover.Pause{By: "worker w1", At: at, Head: &drover.ParkedHead{ID: "h", Attempts: 3}},
			"next", drover.JobStatus{State: drover.JobPending}},
		{"paused, not parked", &drover.Pause{By: "ann@box", At: at, Reason: "maintenance"},
			"h", drover.JobStatus{State: drover.JobPending}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakeStore{st: drover.JobStatus{State: drover.JobPending, Ahead: &pos}}
			// No owner member: a pending answer is final without asking.
			l := &Lookup{Store: store, Fleet: fakeFleet{owner: Owner{AdminAddr: addr}, pause: tc.pause}}
			st, err := l.Job(context.Background(), "q", tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if st.State != tc.want.State || st.Attempt != tc.want.Attempt || st.Error != tc.want.Error || st.By != tc.want.By {
				t.Fatalf("want %s attempt %d error %q by %q, have %+v", tc.want.State, tc.want.Attempt, tc.want.Error, tc.want.By, st)
			}
			if tc.want.State == drover.JobParked && (st.Parked == nil || st.Parked.By != "worker w1" || st.Task != tc.want.Task || st.ExitCode == nil || st.Ahead != nil) {
				t.Fatalf("parked: want the flag, the task, an exit code and no ahead count, have %+v", st)
			}
		})
	}
}
