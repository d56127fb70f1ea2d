package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
)

// A parked queue (its pause flag as a worker writes it) seen, its head's
// args edited, then moved to the dead letters through the API: each step
// checked against Redis and ZooKeeper, each mutation audited, refusals
// included.
func TestAPIParkedQueueRetryEditAndSkip(t *testing.T) {
	r := newRig(t)
	r.queueWith("pk", 2)
	ctx := context.Background()
	es, err := r.store.Log().ReadAfter(ctx, "pk", 0, 2)
	if err != nil || len(es) != 2 {
		t.Fatalf("read: %v, %d entries", err, len(es))
	}
	head := es[0]
	if err := r.zk.Pauses().Set(ctx, drover.PauseQueue, "pk", drover.Pause{By: "worker w1", At: time.Now(), Reason: "parked",
		Head: &drover.ParkedHead{ID: head.ID, Position: head.Position, Task: "t", Attempts: 3, Error: "exit 1", ExitCode: 1}}); err != nil {
		t.Fatal(err)
	}
	if pqs := decode[[]ops.ParkedQueue](t, r.want(200, "viewer", "GET", "/api/v1/parked", "")); len(pqs) != 1 || pqs[0].Pause.Head.ID != head.ID {
		t.Fatalf("parked: want pk at %s, have %+v", head.ID, pqs)
	}
	pq := decode[ops.ParkedQueue](t, r.want(200, "viewer", "GET", "/api/v1/queues/pk/parked", ""))
	if pq.Message == nil || !strings.Contains(strings.Join(strings.Fields(string(pq.Message.Envelope)), ""), `"i":1`) {
		t.Fatalf("head: want its envelope, have %+v", pq.Message)
	}
	r.want(403, "viewer", "POST", "/api/v1/queues/pk/parked/retry", `{"id":"`+head.ID+`"}`)
	r.want(409, "operator", "POST", "/api/v1/queues/pk/parked/retry", `{"id":"`+es[1].ID+`"}`) // not the head

	r.want(200, "operator", "POST", "/api/v1/queues/pk/parked/retry", `{"id":"`+head.ID+`","args":{"i":2},"keep_paused":true}`)
	mi, err := r.store.Inspector().Message(ctx, "pk", head.ID)
	if err != nil || !strings.Contains(string(mi.Raw), `"args":{"i":2}`) || mi.Position != head.Position {
		t.Fatalf("edited head: want args {\"i\":2} at position %d, have %s at %d (%v)", head.Position, mi.Raw, mi.Position, err)
	}
	if ps, _ := r.zk.Pauses().Read(ctx); ps.Queues["pk"].Head == nil {
		t.Fatal("keep_paused: want the queue still parked")
	}

	r.want(200, "operator", "POST", "/api/v1/queues/pk/parked/skip", `{"id":"`+head.ID+`"}`)
	dls, err := r.store.Dead().DeadLetters(ctx, "pk", 0, 10)
	if err != nil || len(dls) != 1 || dls[0].ID != head.ID || !strings.Contains(dls[0].Failure.Reason, "operator-user") {
		t.Fatalf("dead letters: want %s moved by operator-user, have %+v (%v)", head.ID, dls, err)
	}
	if ps, _ := r.zk.Pauses().Read(ctx); len(ps.Queues) != 0 {
		t.Fatalf("after skip: want the queue resumed, have %+v", ps.Queues)
	}
	r.want(409, "viewer", "GET", "/api/v1/queues/pk/parked", "")

	recs := decode[[]ops.AuditRecord](t, r.want(200, "viewer", "GET", "/api/v1/audit", ""))
	seen := map[string]int{}
	for _, rec := range recs {
		if strings.HasPrefix(rec.Action, "parked.") {
			seen[rec.Action+" "+rec.Result[:min(2, len(rec.Result))]]++
		}
	}
	if seen["parked.retry ok"] != 1 || seen["parked.skip ok"] != 1 || len(seen) < 3 {
		t.Fatalf("audit: want a retry, a skip and the refusals, have %v", seen)
	}
}
