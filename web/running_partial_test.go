package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
)

// TestRunningViewListsTheMembersThatAnswered: with one member whose admin
// server accepts and never answers (a worker under kill -STOP), the
// running view still answers 200 within the request bound: the tasks of
// the member that answered, and the silent one named among the
// unreachable. Before issue 41 the whole view waited for the hung member
// until the request's deadline and answered 503.
func TestRunningViewListsTheMembersThatAnswered(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Write([]byte(`{"worker":{"member":"live","queues":[{"name":"q","in_flight":[{"id":"j1","task":"t","attempt":0,"pid":4242,"runtime_seconds":3}]}]}}`))
	}))
	defer live.Close()
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select { // accepts, reads the request, never answers
		case <-req.Context().Done():
		case <-release:
		}
	}))
	defer hung.Close()
	defer close(release)
	for name, srv := range map[string]*httptest.Server{"live": live, "hung": hung} {
		if _, err := r.zk.Group().Join(ctx, drover.Member{Name: name, Host: "h", PID: 1, AdminAddr: strings.TrimPrefix(srv.URL, "http://"), Capacity: 1, StartedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	run := decode[ops.Running](t, r.want(http.StatusOK, "viewer", "GET", "/api/v1/running", ""))
	if len(run.Tasks) != 1 || run.Tasks[0].Member != "live" || run.Tasks[0].PID != 4242 {
		t.Errorf("want the live member's task, have %+v", run.Tasks)
	}
	if why, ok := run.Unreachable["hung"]; !ok || !strings.Contains(why, "did not answer within") {
		t.Errorf("want the hung member named as not answering in time, have %v", run.Unreachable)
	}
	if _, ok := run.Unreachable["live"]; ok {
		t.Errorf("the live member is named unreachable: %v", run.Unreachable)
	}
	if page := r.want(http.StatusOK, "viewer", "GET", "/running", ""); !strings.Contains(page, "hung") || !strings.Contains(page, "j1") {
		t.Errorf("running page: want the live member's task and the hung member named")
	}
}
