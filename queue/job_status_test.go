package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

var _ = addContractCases(
	contractCase{"JobStatusWalk", testJobStatusWalk},
	contractCase{"OutcomeRecordsBoundedAndExpire", testOutcomeRecordsBoundedAndExpire},
)

func jobStatus(t *testing.T, s *Store, q, id string, off drover.Position) drover.JobStatus {
	t.Helper()
	st, err := s.Jobs().JobStatus(context.Background(), q, id, off)
	if err != nil {
		t.Fatalf("JobStatus(%s, %s): %v", q, id, err)
	}
	if st.AsOf.IsZero() || st.Queue != q || st.ID != id {
		t.Fatalf("JobStatus(%s, %s): want queue, id and as_of set, have %+v", q, id, st)
	}
	return st
}

func wantState(t *testing.T, st drover.JobStatus, want drover.JobState) {
	t.Helper()
	if st.State != want {
		t.Fatalf("job %s: want state %s, have %+v", st.ID, want, st)
	}
}

// One job through the states Redis can tell (delayed → pending → retrying
// → pending again → dead), one to succeeded with and without a record, a
// revoked one, and ids never seen.
func testJobStatusWalk(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	const q = "jobs"
	wantState(t, jobStatus(t, s, q, "nobody", 0), drover.JobUnknown)

	due := time.Now().Add(time.Hour)
	if _, err := s.Producer().EnqueueAt(ctx, msg(q, "walk"), due); err != nil {
		t.Fatal(err)
	}
	st := jobStatus(t, s, q, "walk", 0)
	wantState(t, st, drover.JobDelayed)
	if st.DueAt == nil || st.DueAt.UnixMilli() != due.UnixMilli() || st.Task != "t" {
		t.Fatalf("delayed: want due %v and task t, have %+v", due, st)
	}

	first := mustEnqueue(t, s, msg(q, "first"))
	if n, _, err := promoteDueNext(ctx, s.Log(), q, due, 10); err != nil || n != 1 {
		t.Fatalf("PromoteDueNext: want 1, have %d, %v", n, err)
	}
	st = jobStatus(t, s, q, "walk", 0)
	wantState(t, st, drover.JobPending)
	if st.Ahead == nil || *st.Ahead != 1 || st.Position <= first.Position {
		t.Fatalf("pending: want one message ahead and a position after %d, have %+v", first.Position, st)
	}
	if st = jobStatus(t, s, q, "walk", first.Position); *st.Ahead != 0 {
		t.Fatalf("pending after the first message's offset: want 0 ahead, have %+v", st)
	}

	es := readAll(t, s, q, first.Position, 10)
	m := mustDecode(t, es[0])
	m.Attempt = 1
	lastErr, _ := json.Marshal(drover.Failure{Reason: "exit status 3", ExitCode: 3, StderrTail: "boom"})
	history, _ := json.Marshal([]drover.Failure{{Reason: "exit status 2", ExitCode: 2}, {Reason: "exit status 3", ExitCode: 3, StderrTail: "boom"}})
	m.Extra = map[string]json.RawMessage{LastErrorField: lastErr, drover.AttemptErrorsField: history}
	next := time.Now().Add(time.Minute)
	if err := s.Log().Retry(ctx, m, next); err != nil {
		t.Fatal(err)
	}
	st = jobStatus(t, s, q, "walk", first.Position)
	wantState(t, st, drover.JobRetrying)
	if st.Attempt != 1 || st.DueAt == nil || st.DueAt.UnixMilli() != next.UnixMilli() ||
		st.Error != "exit status 3" || st.ExitCode == nil || *st.ExitCode != 3 || st.StderrTail != "boom" {
		t.Fatalf("retrying: want attempt 1, next try %v, last error exit 3, have %+v", next, st)
	}
	if len(st.Attempts) != 1 || st.Attempts[0].ExitCode != 2 {
		t.Fatalf("retrying: want the earlier attempt's error (exit 2) in Attempts, have %+v", st.Attempts)
	}

	// As the worker dead-letters: the envelope of the last attempt, which
	// carries the earlier attempts' errors.
	if err := s.Log().DeadLetter(ctx, q, drover.DeadLetter{Message: m, Failure: drover.Failure{Reason: "gave up", ExitCode: 4, StderrTail: "tail"}}); err != nil {
		t.Fatal(err)
	}
	st = jobStatus(t, s, q, "walk", first.Position)
	wantState(t, st, drover.JobDead)
	if st.Error != "gave up" || st.ExitCode == nil || *st.ExitCode != 4 || st.StderrTail != "tail" || st.FinishedAt == nil {
		t.Fatalf("dead: want reason, exit code 4 and stderr tail, have %+v", st)
	}
	if len(st.Attempts) != 2 || st.Attempts[0].ExitCode != 2 || st.Attempts[1].ExitCode != 3 {
		t.Fatalf("dead: want the two earlier attempts' errors (exit 2, exit 3) in Attempts, have %+v", st.Attempts)
	}

	// Succeeded: below the committed offset, with no record, then with one
	// after the trim removed the message.
	st = jobStatus(t, s, q, "first", first.Position)
	wantState(t, st, drover.JobSucceeded)
	finished := time.Now().UTC().Truncate(time.Millisecond)
	rec := []drover.Outcome{{ID: "first", State: drover.JobSucceeded, Task: "t", Attempt: 0, ExitCode: 0,
		FinishedAt: finished, Duration: 0.25, Member: "w1", StdoutTail: "42\n"}}
	if n, err := s.Log().TrimRecording(ctx, q, first.Position, 0, rec, drover.Outcomes{}); err != nil || n != 1 {
		t.Fatalf("TrimRecording: want 1 entry trimmed, have %d, %v", n, err)
	}
	for _, off := range []drover.Position{0, first.Position} {
		st = jobStatus(t, s, q, "first", off)
		wantState(t, st, drover.JobSucceeded)
		if st.Member != "w1" || st.Duration != 0.25 || st.StdoutTail != "42\n" || st.ExitCode == nil || *st.ExitCode != 0 ||
			st.FinishedAt == nil || !st.FinishedAt.Equal(finished) {
			t.Fatalf("succeeded: want the record's member, duration, stdout and finish time, have %+v", st)
		}
	}

	// Revoked: a record when the policy keeps one, none when it is off.
	for _, id := range []string{"rev", "rev-off"} {
		if _, err := s.Producer().EnqueueIn(ctx, msg(q, id), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := s.Operator().RevokeRecording(ctx, q, "rev", drover.Outcomes{}, "alice"); err != nil || !ok {
		t.Fatalf("RevokeRecording: want true, have %v, %v", ok, err)
	}
	st = jobStatus(t, s, q, "rev", 0)
	wantState(t, st, drover.JobRevoked)
	if st.By != "alice" || st.FinishedAt == nil {
		t.Fatalf("revoked: want by alice and a time, have %+v", st)
	}
	off := drover.Duration(0)
	if ok, err := s.Operator().RevokeRecording(ctx, q, "rev-off", drover.Outcomes{Retention: &off}, "alice"); err != nil || !ok {
		t.Fatalf("RevokeRecording with records off: want true, have %v, %v", ok, err)
	}
	wantState(t, jobStatus(t, s, q, "rev-off", 0), drover.JobUnknown)
	// A revoked id enqueued again reads as what it is now.
	mustEnqueue(t, s, msg(q, "rev"))
	wantState(t, jobStatus(t, s, q, "rev", 0), drover.JobPending)
}

// Records are bounded in count (oldest first) and read unknown once expired.
func testOutcomeRecordsBoundedAndExpire(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	const q = "bounded"
	for i := 1; i <= 5; i++ {
		keep := drover.Duration(time.Duration(i) * time.Hour) // later records expire later
		id := fmt.Sprintf("j%d", i)
		rec := []drover.Outcome{{ID: id, State: drover.JobSucceeded, FinishedAt: time.Now()}}
		if _, err := s.Log().TrimRecording(ctx, q, 0, 0, rec, drover.Outcomes{Retention: &keep, Max: 3}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.Jobs().Outcomes(ctx, q); err != nil || n != 3 {
		t.Fatalf("Outcomes: want 3 records kept (max 3), have %d, %v", n, err)
	}
	for i := 1; i <= 5; i++ {
		want := drover.JobSucceeded
		if i <= 2 {
			want = drover.JobUnknown
		}
		wantState(t, jobStatus(t, s, q, fmt.Sprintf("j%d", i), 0), want)
	}

	// One batch bigger than the bound keeps at most the bound, newest
	// records first.
	var big []drover.Outcome
	for i := 0; i < 100; i++ {
		big = append(big, drover.Outcome{ID: fmt.Sprintf("big%03d", i), State: drover.JobSucceeded, Task: "ü \"q\"\n", FinishedAt: time.Now()})
	}
	if _, err := s.Log().TrimRecording(ctx, "big", 0, 0, big, drover.Outcomes{Max: 16}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Jobs().Outcomes(ctx, "big"); err != nil || n > 16 || n < 14 {
		t.Fatalf("Outcomes after a batch of 100 with max 16: want 14–16 kept, have %d, %v", n, err)
	}
	if st := jobStatus(t, s, "big", "big099", 0); st.State != drover.JobSucceeded || st.Task != "ü \"q\"\n" {
		t.Fatalf("the newest record of a big batch: want succeeded with its task name intact, have %+v", st)
	}
	wantState(t, jobStatus(t, s, "big", "big000", 0), drover.JobUnknown)

	// Records off: nothing is written.
	off := drover.Duration(0)
	rec := []drover.Outcome{{ID: "off", State: drover.JobSucceeded}}
	if _, err := s.Log().TrimRecording(ctx, q, 0, 0, rec, drover.Outcomes{Retention: &off}); err != nil {
		t.Fatal(err)
	}
	wantState(t, jobStatus(t, s, q, "off", 0), drover.JobUnknown)

	// A record kept for 1 ms reads unknown once Redis's clock has passed it.
	short := drover.Duration(time.Millisecond)
	rec = []drover.Outcome{{ID: "short", State: drover.JobSucceeded}}
	if _, err := s.Log().TrimRecording(ctx, q, 0, 0, rec, drover.Outcomes{Retention: &short}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for jobStatus(t, s, q, "short", 0).State != drover.JobUnknown {
		if time.Now().After(deadline) {
			t.Fatal("a record kept for 1ms still reads succeeded after 30s")
		}
		time.Sleep(5 * time.Millisecond) // poll Redis's clock
	}
}

// A script the server forgot (SCRIPT FLUSH, a restart) is sent again
// alone: the trim that did run is not run twice, and the records are kept.
func TestTrimRecordingAfterScriptFlush(t *testing.T) {
	rdb := testBackends[0].client(t)
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	pos := mustEnqueue(t, s, msg("flush", "a")).Position
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Log().Trim(ctx, "flush", 0, 0); err != nil { // load trim again, not record-outcomes
		t.Fatal(err)
	}
	rec := []drover.Outcome{{ID: "a", State: drover.JobSucceeded, FinishedAt: time.Now()}}
	if n, err := s.Log().TrimRecording(ctx, "flush", pos, 0, rec, drover.Outcomes{}); err != nil || n != 1 {
		t.Fatalf("TrimRecording with an unknown record script: want 1 entry trimmed, have %d, %v", n, err)
	}
	wantState(t, jobStatus(t, s, "flush", "a", 0), drover.JobSucceeded)
}
