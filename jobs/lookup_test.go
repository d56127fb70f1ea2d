package jobs

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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

type fakeFleet struct{ owner Owner }

func (f fakeFleet) QueueOwner(context.Context, string) (Owner, error) { return f.owner, nil }

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
	l := &Lookup{Store: store, Fleet: fakeFleet{Owner{Member: "w1", AdminAddr: addr, Offset: 77}}, Token: "tok"}
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
