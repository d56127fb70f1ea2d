package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/drover-dev/drover"
)

// LastErrorField is the envelope field in which the worker keeps a retried
// message's last failure ({"error", "exit_code", "failed_at"}), so that a
// status lookup can say why a job is retrying.
const LastErrorField = "last_error"

// JobStatus says where job id of queue is, from Redis alone, in one round
// trip at a cost that does not grow with the queue (docs/redis-schema.md,
// "Job status"). offset is the queue's committed offset when the caller
// knows it (from ZooKeeper), else 0: a message in the log at or below it is
// done, and Ahead counts the log entries between the offset and the
// message.
//
// The answer is one of delayed, retrying (delayed with attempt > 0),
// pending, dead, succeeded, revoked or unknown. Redis cannot tell that a
// pending message is running: that is the queue owner's live state (see the
// jobs package, which asks the owner). A message in the log at or below a
// known offset is succeeded (retries and dead letters leave the log).
func (s Jobs) JobStatus(ctx context.Context, queue, id string, offset drover.Position) (drover.JobStatus, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return drover.JobStatus{}, fmt.Errorf("job status of %s: %w", id, err)
	}
	if id == "" {
		return drover.JobStatus{}, fmt.Errorf("job status in %s: empty id", queue)
	}
	keys := []string{qk.log, qk.msg, qk.delayed, qk.dead, qk.deadmsg, qk.done}
	r, err := s.run(ctx, jobStatusScript, keys, id, int64(offset)).Slice()
	if err == nil && len(r) != 8 {
		err = fmt.Errorf("job-status script returned %d values, want 8", len(r))
	}
	if err != nil {
		return drover.JobStatus{}, fmt.Errorf("job status of %s in %s: %w", id, queue, err)
	}
	nowUS, _ := r[0].(int64)
	st := drover.JobStatus{Queue: queue, ID: id, State: drover.JobUnknown, AsOf: time.UnixMicro(nowUS).UTC()}
	due, delayed := replyNumber(r[1])
	pos, inLog := replyNumber(r[2])
	ahead, _ := r[3].(int64)
	env, _ := r[4].(string)
	deadMS, dead := replyNumber(r[5])
	deadRec, _ := r[6].(string)
	rec, recorded := r[7].(string)

	var m *drover.Message
	if env != "" {
		m, _ = decodeEnvelope([]byte(env))
	}
	if m != nil {
		st.Task, st.Attempt = m.Task, m.Attempt
	}
	// A record finished after the message took its position is about this
	// message: it succeeded and waits for the owner's commit and trim.
	recordIsNewer := recorded && inLog && recordFinishedAfter(rec, time.UnixMicro(pos))
	switch {
	case delayed:
		t := time.UnixMilli(due).UTC()
		st.DueAt = &t
		st.State = drover.JobDelayed
		if m != nil && m.Attempt > 0 {
			st.State = drover.JobRetrying
			lastError(&st, m)
		}
	case inLog && !recordIsNewer && (offset == 0 || drover.Position(pos) > offset):
		st.State = drover.JobPending
		st.Position = drover.Position(pos)
		st.Ahead = &ahead
		if m != nil && m.Attempt > 0 {
			lastError(&st, m)
		}
	case inLog:
		// At or below the committed offset: done, kept for the queue's
		// retention or not trimmed yet. Only success leaves it there.
		st.State = drover.JobSucceeded
		st.Position = drover.Position(pos)
		if recorded {
			fromRecord(&st, rec)
		} else {
			st.Note = "done (at or below the committed offset); no outcome record"
		}
	case dead:
		st.State = drover.JobDead
		dl := parseDeadRecord(id, []byte(deadRec))
		if dl.Message != nil {
			st.Task, st.Attempt = dl.Message.Task, dl.Message.Attempt
			st.Attempts = attemptErrors(dl.Message) // the attempts before the fatal one
		}
		code := dl.Failure.ExitCode
		st.Error, st.ExitCode, st.StderrTail = dl.Failure.Reason, &code, dl.Failure.StderrTail
		st.By = dl.Failure.CancelledBy // who cancelled it, when it died of a cancel
		t := time.UnixMilli(deadMS).UTC()
		if !dl.Failure.FailedAt.IsZero() {
			t = dl.Failure.FailedAt.UTC()
		}
		st.FinishedAt = &t
	case recorded:
		fromRecord(&st, rec)
	}
	return st, nil
}

// recordFinishedAfter reports whether the outcome record finished after t.
func recordFinishedAfter(rec string, t time.Time) bool {
	var o struct {
		FinishedAt time.Time `json:"finished_at"`
	}
	return json.Unmarshal([]byte(rec), &o) == nil && o.FinishedAt.After(t)
}

// fromRecord fills st from an outcome record.
func fromRecord(st *drover.JobStatus, rec string) {
	var o drover.Outcome
	if err := json.Unmarshal([]byte(rec), &o); err != nil {
		st.State, st.Note = drover.JobUnknown, "undecodable outcome record"
		return
	}
	if o.State == "" {
		o.State = drover.JobSucceeded
	}
	st.State = o.State
	st.Task, st.Attempt, st.Member, st.By = o.Task, o.Attempt, o.Member, o.By
	st.Duration, st.StdoutTail = o.Duration, o.StdoutTail
	t := o.FinishedAt.UTC()
	st.FinishedAt = &t
	if o.State == drover.JobSucceeded {
		code := o.ExitCode
		st.ExitCode = &code
	}
}

// lastError fills st's last failure from the envelope's last_error field.
func lastError(st *drover.JobStatus, m *drover.Message) {
	raw, ok := m.Extra[LastErrorField]
	if !ok {
		return
	}
	var f drover.Failure
	if json.Unmarshal(raw, &f) != nil {
		return
	}
	code := f.ExitCode
	st.Error, st.ExitCode, st.StderrTail = f.Reason, &code, f.StderrTail
	st.By = f.CancelledBy // a retry of a cancelled attempt
	// The history ends with the last error, which the fields above hold.
	if h := attemptErrors(m); len(h) > 0 {
		st.Attempts = h[:len(h)-1]
	}
}

// attemptErrors decodes the envelope's history of failed attempts (the
// worker's attempt_errors, oldest first); nil when there is none.
func attemptErrors(m *drover.Message) []drover.Failure {
	if m == nil {
		return nil
	}
	raw, ok := m.Extra[drover.AttemptErrorsField]
	if !ok {
		return nil
	}
	var h []drover.Failure
	if json.Unmarshal(raw, &h) != nil {
		return nil
	}
	return h
}

// replyNumber reads a score or integer from a script reply: false (nil)
// when absent.
func replyNumber(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case string:
		if n, err := strconv.ParseInt(x, 10, 64); err == nil {
			return n, true
		}
		f, err := strconv.ParseFloat(x, 64)
		return int64(f), err == nil
	}
	return 0, false
}
