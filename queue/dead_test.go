package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

var _ = addContractCases(contractCase{"DeadLetters", testDeadLetters})

// Dead letters round trip: kill (decodable, undecodable and missing
// envelopes), list newest first with paging, get, retry, purge.
func testDeadLetters(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	m := msg("dlq", "bad-job")
	m.Extra = map[string]json.RawMessage{"trace_id": json.RawMessage(`"abc"`)}
	mustEnqueue(t, s, m)
	es := readAll(t, s, "dlq", 0, 10)
	if len(es) != 1 {
		t.Fatalf("want bad-job in the log, have %+v", es)
	}
	dm := mustDecode(t, es[0])
	dm.Attempt = 5
	raw, err := dm.MarshalJSON()
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	f := drover.Failure{Reason: "exit status 3", ExitCode: 3, StderrTail: "boom\n", FailedAt: t0}
	if err := s.Dead().Kill(ctx, "dlq", "bad-job", raw, f); err != nil {
		t.Fatalf("Kill(bad-job): %v", err)
	}
	invalidUTF8 := []byte{'{', 0xff, 0xfe}
	poison := map[string][]byte{"garbled": []byte(`{"id":"garbled"`), "binary": invalidUTF8, "missing": nil}
	for i, id := range []string{"garbled", "binary", "missing"} {
		f := drover.Failure{Reason: "poison " + id, ExitCode: -1, FailedAt: t0.Add(time.Duration(i+1) * time.Minute)}
		if err := s.Dead().Kill(ctx, "dlq", id, poison[id], f); err != nil {
			t.Fatalf("Kill(%s): %v", id, err)
		}
	}

	// The killed message left the log and :msg; the record holds the
	// envelope plus the failure fields.
	qk := s.keys.queue("dlq")
	if n, _ := rdb.ZCard(ctx, qk.log).Result(); n != 0 {
		t.Fatalf("log after kill: want empty, have %d entries", n)
	}
	if ok, _ := rdb.HExists(ctx, qk.msg, "bad-job").Result(); ok {
		t.Fatalf("envelope of bad-job still in :msg after kill")
	}
	rec, err := rdb.HGet(ctx, qk.deadmsg, "bad-job").Bytes()
	if err != nil {
		t.Fatalf("HGET deadmsg bad-job: %v", err)
	}
	var fields map[string]any
	if err := json.Unmarshal(rec, &fields); err != nil {
		t.Fatalf("dead record %s: %v", rec, err)
	}
	for k, want := range map[string]any{"id": "bad-job", "task": "t", "attempt": 5.0, "trace_id": "abc",
		"error": "exit status 3", "exit_code": 3.0, "stderr_tail": "boom\n", "failed_at": "2025-03-01T12:00:00Z"} {
		if fields[k] != want {
			t.Errorf("dead record field %s: want %v, have %v (record %s)", k, want, fields[k], rec)
		}
	}

	// Newest first, paged.
	page1, err := s.Dead().DeadLetters(ctx, "dlq", 0, 2)
	if err != nil {
		t.Fatalf("DeadLetters: %v", err)
	}
	page2, err := s.Dead().DeadLetters(ctx, "dlq", 2, 2)
	if err != nil {
		t.Fatalf("DeadLetters page 2: %v", err)
	}
	var order []string
	for _, dl := range append(page1, page2...) {
		order = append(order, dl.ID)
	}
	if fmt.Sprint(order) != "[missing binary garbled bad-job]" {
		t.Fatalf("dead letters newest first: want [missing binary garbled bad-job], have %v", order)
	}
	byID := map[string]drover.DeadLetter{}
	for _, dl := range append(page1, page2...) {
		byID[dl.ID] = dl
	}
	if dl := byID["garbled"]; dl.Message != nil || string(dl.Raw) != `{"id":"garbled"` || dl.Failure.Reason != "poison garbled" || dl.Failure.ExitCode != -1 {
		t.Fatalf("garbled: want raw kept and no message, have %+v", dl)
	}
	if dl := byID["binary"]; dl.Message != nil || string(dl.Raw) != string(invalidUTF8) {
		t.Fatalf("binary: want the raw bytes back, have %+v", dl)
	}
	if dl := byID["missing"]; dl.Message != nil || dl.Raw != nil || dl.Failure.Reason != "poison missing" {
		t.Fatalf("missing: want no raw and no message, have %+v", dl)
	}

	dl, err := s.Dead().GetDeadLetter(ctx, "dlq", "bad-job")
	if err != nil {
		t.Fatalf("GetDeadLetter(bad-job): %v", err)
	}
	if !dl.Failure.FailedAt.Equal(t0) || dl.Failure.Reason != f.Reason || dl.Failure.ExitCode != 3 || dl.Failure.StderrTail != "boom\n" {
		t.Fatalf("failure: want %+v, have %+v", f, dl.Failure)
	}
	if dl.Message == nil || dl.Message.Attempt != 5 || string(dl.Message.Extra["trace_id"]) != `"abc"` || len(dl.Message.Extra) != 1 {
		t.Fatalf("dead message: want attempt 5 and only trace_id extra, have %+v", dl.Message)
	}
	if _, err := s.Dead().GetDeadLetter(ctx, "dlq", "nope"); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("GetDeadLetter(nope): want ErrNotFound, have %v", err)
	}

	// Retry: back in the log with attempt 0, out of the dead letters, even
	// though the id is inside the dedupe window.
	r, err := s.Dead().RetryDead(ctx, "dlq", "bad-job")
	if err != nil || r.Position == 0 {
		t.Fatalf("RetryDead(bad-job): want a position, have %+v, %v", r, err)
	}
	es = readAll(t, s, "dlq", 0, 10)
	if len(es) != 1 || es[0].Position != r.Position {
		t.Fatalf("after RetryDead: want bad-job at %d, have %+v", r.Position, es)
	}
	back := mustDecode(t, es[0])
	if back.Attempt != 0 || string(back.Extra["trace_id"]) != `"abc"` || len(back.Extra) != 1 {
		t.Fatalf("retried message: want attempt 0 and only trace_id extra, have %+v", back)
	}
	if _, err := s.Dead().GetDeadLetter(ctx, "dlq", "bad-job"); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("bad-job after retry: want it gone from the dead letters, have %v", err)
	}
	if _, err := s.Dead().RetryDead(ctx, "dlq", "bad-job"); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("RetryDead twice: want ErrNotFound, have %v", err)
	}
	if _, err := s.Dead().RetryDead(ctx, "dlq", "garbled"); !errors.Is(err, drover.ErrPoison) {
		t.Fatalf("RetryDead(garbled): want ErrPoison, have %v", err)
	}

	if b, err := s.Log().Backlog(ctx, "dlq", 0); err != nil || b.Dead != 3 {
		t.Fatalf("Backlog: want 3 dead, have %+v, %v", b, err)
	}
	if ok, err := s.Dead().PurgeDead(ctx, "dlq", "garbled"); err != nil || !ok {
		t.Fatalf("PurgeDead(garbled): want true, have %v, %v", ok, err)
	}
	if ok, err := s.Dead().PurgeDead(ctx, "dlq", "garbled"); err != nil || ok {
		t.Fatalf("PurgeDead(garbled) again: want false, have %v, %v", ok, err)
	}
	if n, err := s.Dead().PurgeAllDead(ctx, "dlq"); err != nil || n != 2 {
		t.Fatalf("PurgeAllDead: want 2, have %d, %v", n, err)
	}
	if dls, err := s.Dead().DeadLetters(ctx, "dlq", 0, 10); err != nil || len(dls) != 0 {
		t.Fatalf("after purge: want no dead letters, have %+v, %v", dls, err)
	}
	if n, _ := rdb.Exists(ctx, qk.dead, qk.deadmsg).Result(); n != 0 {
		t.Fatalf("after purge: want :dead and :deadmsg gone, %d remain", n)
	}
}

var _ = addContractCases(contractCase{"DeadLetterFromMessage", testDeadLetterFromMessage})

// DeadLetter (the worker's form) keeps the message as given, with its
// failure, and takes it out of the log.
func testDeadLetterFromMessage(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	mustEnqueue(t, s, msg("dlq2", "j"))
	es := readAll(t, s, "dlq2", 0, 10)
	m := mustDecode(t, es[0])
	m.Attempt = 4
	f := drover.Failure{Reason: "timeout", ExitCode: -1, StderrTail: "killed"}
	if err := s.Log().DeadLetter(ctx, "dlq2", drover.DeadLetter{Message: m, Failure: f}); err != nil {
		t.Fatalf("DeadLetter: %v", err)
	}
	dl, err := s.Dead().GetDeadLetter(ctx, "dlq2", "j")
	if err != nil {
		t.Fatalf("GetDeadLetter(j): %v", err)
	}
	if dl.Message == nil || dl.Message.Attempt != 4 || dl.Message.Task != "t" || dl.Failure.Reason != "timeout" || dl.Failure.FailedAt.IsZero() {
		t.Fatalf("dead letter j: want attempt 4, task t, reason timeout, a failure time; have %+v / %+v", dl.Message, dl.Failure)
	}
	if es := readAll(t, s, "dlq2", 0, 10); len(es) != 0 {
		t.Fatalf("log after DeadLetter: want empty, have %+v", es)
	}
}
