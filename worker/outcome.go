package worker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/worker/executor"
)

// lastErrorField is the envelope field that carries a retried message's
// last failure (queue.LastErrorField; the worker does not import queue).
const lastErrorField = "last_error"

// lastErrorStderr bounds the stderr tail kept in a retried envelope.
const lastErrorStderr = 1 << 10

// setLastError records f in m's envelope before a retry, so that a status
// lookup (and the next attempt) can see why the previous one failed.
func setLastError(m *drover.Message, f drover.Failure) {
	if n := len(f.StderrTail); n > lastErrorStderr {
		f.StderrTail = f.StderrTail[n-lastErrorStderr:]
	}
	b, err := json.Marshal(f)
	if err != nil {
		return
	}
	extra := make(map[string]json.RawMessage, len(m.Extra)+2)
	for k, v := range m.Extra {
		extra[k] = v
	}
	extra[lastErrorField] = b
	if h, err := appendAttemptError(m.Extra[drover.AttemptErrorsField], f); err == nil {
		extra[drover.AttemptErrorsField] = h
	}
	m.Extra = extra
}

// attemptErrorStderr bounds the stderr tail of each failure in the history.
const attemptErrorStderr = 256

// appendAttemptError adds f to the attempt_errors history (a JSON array,
// oldest first), keeping the last drover.MaxAttemptErrors: the console and
// job status show every attempt's error, not only the last. A history that
// does not decode starts again.
func appendAttemptError(history json.RawMessage, f drover.Failure) (json.RawMessage, error) {
	var h []drover.Failure
	if len(history) > 0 && json.Unmarshal(history, &h) != nil {
		h = nil
	}
	if n := len(f.StderrTail); n > attemptErrorStderr {
		f.StderrTail = f.StderrTail[n-attemptErrorStderr:]
	}
	h = append(h, f)
	if len(h) > drover.MaxAttemptErrors {
		h = h[len(h)-drover.MaxAttemptErrors:]
	}
	return json.Marshal(h)
}

// finished is what a succeeded attempt adds to its slot for the message's
// outcome record (the slot's message has the id and the task). It is kept
// in the slot by value and the record is built by the queue loop as it
// takes the slot back (keepOutcome): a record costs no allocation of its
// own in the task's path, where the *drover.Outcome it replaced was one
// more object per task for the garbage collector (docs/decisions.md,
// "Outcome records: what they cost per task").
type finished struct {
	ok       bool // a record is due: the queue keeps records
	attempt  int
	exitCode int
	at       time.Time
	duration time.Duration
	stdout   []byte // the tail kept, already cut to the queue's bound
}

// finishedOf returns what a succeeded attempt of m adds to its record; ok
// is false when the queue keeps no records.
func (l *queueLoop) finishedOf(m *drover.Message, res executor.Result, cfg *drover.QueueConfig) finished {
	if cfg.Outcomes.Keep() <= 0 {
		return finished{}
	}
	f := finished{ok: true, attempt: m.Attempt, exitCode: res.ExitCode, at: res.Started.Add(res.Duration), duration: res.Duration}
	if n := cfg.Outcomes.StdoutTail; n > 0 && len(res.Stdout) > 0 {
		f.stdout = res.Stdout[max(len(res.Stdout)-n, 0):]
	}
	return f
}

// keepOutcome buffers a finished slot's record for the next trim. The
// buffer is bounded by the queue's record bound: while commits fail, the
// oldest records go first, as they would in Redis.
func (l *queueLoop) keepOutcome(s *slot) {
	f := &s.finished
	if !f.ok {
		return
	}
	m := s.d.Message
	l.outcomes = append(l.outcomes, drover.Outcome{
		ID: m.ID, State: drover.JobSucceeded, Task: m.Task, Attempt: f.attempt, ExitCode: f.exitCode,
		FinishedAt: f.at.UTC(), Duration: f.duration.Seconds(), Member: l.w.cfg.Member, StdoutTail: string(f.stdout),
	})
	s.finished = finished{}
	if max := l.config().Outcomes.MaxRecords(); len(l.outcomes) > max {
		l.outcomes = l.outcomes[len(l.outcomes)-max:]
	}
}

// trimLog trims after a commit, writing outcomes (records of the messages
// the commit covers) in the same round trip when there are any.
func (l *queueLoop) trimLog(ctx context.Context, pos drover.Position, outcomes []drover.Outcome) error {
	cfg := l.config()
	if len(outcomes) == 0 {
		_, err := l.w.cfg.Store.Trim(ctx, l.name, pos, cfg.Retention.Std())
		return err
	}
	_, err := l.w.cfg.Store.TrimRecording(ctx, l.name, pos, cfg.Retention.Std(), outcomes, cfg.Outcomes)
	return err
}
