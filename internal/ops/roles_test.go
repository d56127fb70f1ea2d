package ops

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/scheduler"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// fleet is one Ops on real servers, with the session and store under it
// for set-up and checks.
type fleet struct {
	ops   *Ops
	zk    *coordinator.Session
	store *queue.Store
}

func newFleet(t *testing.T) fleet {
	t.Helper()
	ctx := context.Background()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: testenv.ZooKeeper(t).Addrs, Root: testenv.Chroot(t), SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	st, err := queue.New(queue.Config{Client: rdb, Prefix: testenv.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(Config{ZK: s, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return fleet{ops: o, zk: s, store: st}
}

func (f fleet) createQueue(t *testing.T, q string) {
	t.Helper()
	if _, err := f.ops.Queues().SetConfig(context.Background(), drover.QueueConfig{Name: q, Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}, -1); err != nil {
		t.Fatal(err)
	}
}

func (f fleet) paused(t *testing.T, q string) bool {
	t.Helper()
	p, err := f.zk.Pauses().Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, ok := p.Paused(q, "nobody")
	return ok
}

// Queues.Pause refuses what it must before writing anything: an unknown
// queue, a reason past its bound, a bad member name; a family's key
// before its first enqueue is a queue (KnownQueue); resuming what is not
// paused is not an error.
func TestQueuesPauseRules(t *testing.T) {
	f := newFleet(t)
	ctx := context.Background()
	f.createQueue(t, "emails")
	if _, err := f.ops.Families().Set(ctx, drover.FamilyConfig{Name: "cust", Prefix: "cust-", Queue: drover.QueueConfig{Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}}, -1); err != nil {
		t.Fatal(err)
	}
	qs := f.ops.Queues()
	if err := qs.Pause(ctx, drover.PauseQueue, "nosuch", "alice", ""); !IsNotFound(err) || f.paused(t, "nosuch") {
		t.Errorf("pause an unknown queue: want not found and no flag, have %v", err)
	}
	if err := qs.Pause(ctx, drover.PauseQueue, "emails", "alice", strings.Repeat("r", drover.MaxReasonBytes+1)); !IsBadInput(err) || f.paused(t, "emails") {
		t.Errorf("pause with a reason past %d bytes: want bad input and no flag, have %v", drover.MaxReasonBytes, err)
	}
	if err := qs.Pause(ctx, drover.PauseMember, "a/b", "alice", ""); !IsBadInput(err) {
		t.Errorf("pause member a/b: want bad input, have %v", err)
	}
	if err := qs.Pause(ctx, drover.PauseQueue, "cust-1", "alice", "before its first enqueue"); err != nil || !f.paused(t, "cust-1") {
		t.Errorf("pause a family's key before its first enqueue: want paused, have %v", err)
	}
	if sel, err := f.ops.Find().Select(ctx, "", []string{"emails", "cust-2"}); err != nil || len(sel) != 2 {
		t.Errorf("select a configured queue and a family's key by name: want both, have %v %v", sel, err)
	}
	if _, err := f.ops.Find().Select(ctx, "", []string{"emails", "nosuch"}); !IsNotFound(err) {
		t.Errorf("select an unknown queue by name: want not found, have %v", err)
	}
	if err := qs.Resume(ctx, drover.PauseQueue, "emails"); err != nil {
		t.Errorf("resume what is not paused: want nil, have %v", err)
	}
	if err := qs.Pause(ctx, drover.PauseQueue, "emails", "alice", "smtp"); err != nil || !f.paused(t, "emails") {
		t.Fatalf("pause emails: want paused, have %v", err)
	}
	if err := qs.Resume(ctx, drover.PauseQueue, "emails"); err != nil || f.paused(t, "emails") {
		t.Errorf("resume emails: want not paused, have %v", err)
	}
}

// Queues.ResetOffset is refused while a member owns the queue and it is
// not paused (and changes nothing); paused, the reset goes through; a dry
// run changes nothing.
func TestQueuesResetOffsetRefusedWhileOwnedAndNotPaused(t *testing.T) {
	f := newFleet(t)
	ctx := context.Background()
	f.createQueue(t, "q")
	for range 3 {
		if _, err := f.store.Producer().Enqueue(ctx, &drover.Message{Queue: "q", Task: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.zk.Claims().Claim(ctx, "q", coordinator.Owner{Member: "w1"}); err != nil {
		t.Fatal(err)
	}
	qs := f.ops.Queues()
	offset := func() drover.Position {
		t.Helper()
		off, err := f.zk.Claims().Offset(ctx, "q")
		if err != nil {
			t.Fatal(err)
		}
		return off.Offset.Position
	}
	p, err := qs.ResetOffset(ctx, "q", ResetTarget{Latest: true}, "alice", false)
	if !errors.Is(err, ErrRefused) || offset() != 0 {
		t.Fatalf("reset an owned, unpaused queue: want refused and offset 0, have %v and %d", err, offset())
	}
	if p.Owner != "w1" || p.Warning == "" {
		t.Errorf("refused reset: want the owner and a warning, have %+v", p)
	}
	if err := qs.Pause(ctx, drover.PauseQueue, "q", "alice", "replay"); err != nil {
		t.Fatal(err)
	}
	last, err := f.store.Inspector().LastPosition(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := qs.ResetOffset(ctx, "q", ResetTarget{Latest: true}, "alice", true); err != nil || p.To != last || p.Before != 3 || offset() != 0 {
		t.Fatalf("dry run: want a preview to %d (3 skipped) and offset 0, have %+v %v and %d", last, p, err, offset())
	}
	if p, err := qs.ResetOffset(ctx, "q", ResetTarget{Latest: true}, "alice", false); err != nil || offset() != last || p.Run != 0 {
		t.Fatalf("reset a paused queue to latest: want offset %d and nothing to run, have %+v %v and %d", last, p, err, offset())
	}
}

// Messages.Revoke deletes a delayed message once, keeps its outcome with
// who revoked it, and says not found the second time; a dead letter that
// does not exist is not found either way.
func TestMessagesRevokeAndDeadLetters(t *testing.T) {
	f := newFleet(t)
	ctx := context.Background()
	f.createQueue(t, "q")
	res, err := f.store.Producer().EnqueueAt(ctx, &drover.Message{Queue: "q", Task: "t"}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ms := f.ops.Messages()
	if err := ms.Revoke(ctx, "q", res.ID, "alice"); err != nil {
		t.Fatalf("revoke a delayed message: %v", err)
	}
	if err := ms.Revoke(ctx, "q", res.ID, "alice"); !errors.Is(err, drover.ErrNotFound) {
		t.Errorf("revoke it again: want not found, have %v", err)
	}
	st, err := f.ops.Jobs().Status(ctx, "q", res.ID)
	if err != nil || st.State != drover.JobRevoked {
		t.Errorf("status of the revoked job: want revoked, have %+v %v", st, err)
	}
	if err := ms.Revoke(ctx, "nosuch", res.ID, "alice"); !errors.Is(err, drover.ErrQueueNotFound) {
		t.Errorf("revoke in an unknown queue: want queue not found, have %v", err)
	}
	if n, err := ms.PurgeDead(ctx, "q", "nosuch"); !IsNotFound(err) || n != 0 {
		t.Errorf("purge a dead letter that does not exist: want not found and 0, have %d %v", n, err)
	}
	if _, err := ms.RetryDead(ctx, "q", "nosuch"); !IsNotFound(err) {
		t.Errorf("retry a dead letter that does not exist: want not found, have %v", err)
	}
	if _, err := ms.Dead(ctx, "q", 0, MaxPage+1); !IsBadInput(err) {
		t.Errorf("a page of %d: want bad input, have %v", MaxPage+1, err)
	}
}

// AuditLog caps what it stores (a 1 MB detail is stored in at most
// drover.MaxAuditTextBytes), keeps refusals apart from mutations, and
// refuses a bad page.
func TestAuditLogCapsAndSeparates(t *testing.T) {
	f := newFleet(t)
	ctx := context.Background()
	a := f.ops.Audit()
	if err := a.Record(ctx, AuditRecord{Who: "alice", Action: "queue.pause", Target: "/queues/q/pause", Detail: strings.Repeat("x", 1<<20), Result: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := a.RecordRefusals(ctx, AuditRecord{Who: "anonymous", Action: "request.refused", Result: "403"}); err != nil {
		t.Fatal(err)
	}
	recs, err := a.Records(ctx, 0, 10)
	if err != nil || len(recs) != 1 || recs[0].Action != "queue.pause" {
		t.Fatalf("records: want the one mutation, have %+v %v", recs, err)
	}
	if n := len(recs[0].Detail); n > drover.MaxAuditTextBytes {
		t.Errorf("a 1 MB detail: want at most %d bytes stored, have %d", drover.MaxAuditTextBytes, n)
	}
	if recs[0].At.IsZero() {
		t.Errorf("a record without a time: want it stamped, have zero")
	}
	refused, err := a.Refusals(ctx, 0, 10)
	if err != nil || len(refused) != 1 || refused[0].Action != "request.refused" {
		t.Errorf("refusals: want the one refusal, have %+v %v", refused, err)
	}
	if _, err := a.Records(ctx, -1, 10); !IsBadInput(err) {
		t.Errorf("offset -1: want bad input, have %v", err)
	}
}

// Schedules.Add refuses a name taken (Put replaces it), Trigger enqueues
// into the entry's queue, Remove deletes.
func TestSchedulesAddPutTriggerRemove(t *testing.T) {
	f := newFleet(t)
	ctx := context.Background()
	f.createQueue(t, "q")
	sc := f.ops.Schedules()
	def := scheduler.Definition{Name: "s1", Queue: "q", Task: "a", Schedule: scheduler.Spec{Type: scheduler.TypeInterval, Every: time.Hour}}
	if err := sc.Add(ctx, def); err != nil {
		t.Fatal(err)
	}
	def.Task = "b"
	if err := sc.Add(ctx, def); !errors.Is(err, scheduler.ErrExists) {
		t.Errorf("add a name taken: want ErrExists, have %v", err)
	}
	if err := sc.Put(ctx, def); err != nil {
		t.Fatal(err)
	}
	if s, err := sc.Get(ctx, "s1"); err != nil || s.Task != "b" {
		t.Errorf("after put: want task b, have %+v %v", s, err)
	}
	res, err := sc.Trigger(ctx, "s1")
	if err != nil || !strings.HasPrefix(res.ID, "sched:s1:manual-") || res.Position == 0 {
		t.Errorf("trigger: want a manual job in the log, have %+v %v", res, err)
	}
	if err := sc.Remove(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Get(ctx, "s1"); !IsNotFound(err) {
		t.Errorf("after remove: want not found, have %v", err)
	}
}
