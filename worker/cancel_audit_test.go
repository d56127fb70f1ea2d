package worker

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

// TestAdminCancelTakesTheCancellerFromTheToken: POST /debug/cancel with
// by=admin-user and an operator's token cancels as the operator (the
// task's CancelledBy, the answer) and writes a job.cancel record naming
// the operator to the fleet's audit log in Redis, through the console's
// writer; the by= claim is only noted in the record's detail.
func TestAdminCancelTakesTheCancellerFromTheToken(t *testing.T) {
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	st, err := queue.New(queue.Config{Client: rdb, Prefix: testenv.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	opToken, opSpec, err := auth.NewToken("operator-user", auth.Operator)
	if err != nil {
		t.Fatal(err)
	}
	_, adminSpec, err := auth.NewToken("admin-user", auth.Admin)
	if err != nil {
		t.Fatal(err)
	}
	guard, err := auth.NewGuard([]string{opSpec, adminSpec})
	if err != nil {
		t.Fatal(err)
	}

	log := newMemLog()
	log.add("q", msg("a"))
	w := newTestWorker(t, log, &cancellable{}, nil)
	if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a to run", func() bool { _, ok := w.Job("q", "a"); return ok })
	h := w.AdminHandler(AdminConfig{Debug: guard.Wrap, Audit: func(ctx context.Context, e AuditEntry) error {
		return ops.WriteAudit(ctx, st.Operator(), ops.AuditRecord(e), nil)
	}})

	req := httptest.NewRequest("POST", "/debug/cancel?queue=q&id=a&by=admin-user", nil)
	req.RemoteAddr, req.Host = "10.0.0.9:4000", "w1:9090"
	req.Header.Set("Authorization", "Bearer "+opToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("cancel with an operator token: want 200, have %d: %s", rec.Code, rec.Body)
	}
	var js JobState
	if err := json.Unmarshal(rec.Body.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	if js.Task.CancelledBy != "operator-user" {
		t.Errorf("cancelled by: want the token's principal operator-user, have %q", js.Task.CancelledBy)
	}
	raw, err := st.Operator().Audit(context.Background(), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 1 {
		t.Fatalf("audit log: want one job.cancel record, have %d: %q", len(raw), raw)
	}
	var ar ops.AuditRecord
	if err := json.Unmarshal(raw[0], &ar); err != nil {
		t.Fatal(err)
	}
	if ar.Action != "job.cancel" || ar.Who != "operator-user" || ar.Role != "operator" || ar.Status != http.StatusOK ||
		ar.Target != "/queues/q/running/a/cancel" || ar.Remote != "10.0.0.9:4000" || !strings.Contains(ar.Detail, "for=admin-user (as the caller says)") {
		t.Errorf("audit record: want job.cancel of /queues/q/running/a/cancel by operator-user (operator), 200, from 10.0.0.9:4000, noting the claim; have %+v", ar)
	}
}
