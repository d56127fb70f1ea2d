package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/metrics"
	"github.com/drover-dev/drover/tracing"
	"github.com/drover-dev/drover/worker/executor"
)

// runner runs fetched messages to their end (success, a retry handed to the
// delayed set, a dead letter), gives the task's slot back to the worker's
// pool and reports each to the run goroutine, which always receives the
// report. It exits when the run goroutine closes tasks.
func (l *queueLoop) runner(tasks <-chan *slot) {
	for s := range tasks {
		if m := s.d.Message; m != nil && m.Attempt == 0 {
			l.w.stages.enqueueStart.add(sinceEnqueue(time.Now(), s.d.Position))
		}
		done := l.runMessage(s)
		// The slot goes to the next queue now, not when the run goroutine
		// next looks: it may be in a read, and with thousands of busy
		// queues sharing the pool every slot then waited a round trip.
		l.w.pool.release(l.name)
		l.results <- taskDone{s: s, done: done}
	}
}

// runMessage returns true when the message is finished here, false when it
// must run again under the next owner (aborted, or the queue was lost).
func (l *queueLoop) runMessage(s *slot) bool {
	d := s.d
	if d.Err != nil || d.Message == nil {
		reason := "undecodable envelope"
		if d.Err != nil {
			reason = d.Err.Error()
		}
		return l.deadLetter(drover.DeadLetter{ID: d.ID, Raw: d.Raw, Failure: drover.Failure{
			Reason: reason, ExitCode: -1, FailedAt: l.w.cfg.Clock.Now(),
		}}, "poison")
	}
	m := *d.Message
	if m.Queue == "" {
		m.Queue = l.name
	}
	m.Position = d.Position
	envelope := d.Raw
	ctx, span := l.w.cfg.Tracer.StartTask(l.taskCtx, l.name, &m, l.w.cfg.Clock.Now()) // nil span: tracing off
	defer span.End()
	// reserved: a start is recorded that did not run the task (the
	// executor aborted the attempt by itself), so the next attempt here
	// takes it rather than recording another.
	reserved := false
	// known is the message's starts as this owner knows them: recorded
	// when it was read, plus its own since (the queue is owned
	// exclusively). sent is the record of a start sent without waiting;
	// every later write about the message, and its next start, waits for
	// it first (settleStart), so the record is never overtaken.
	known := d.Starts
	if known < 0 {
		// Read without its starts: only this owner can have started it
		// (loopStartsRead), so none is recorded — unless its envelope
		// says it was retried (promoted from :delayed): then its count is
		// not known here and its start waits for it.
		known = 0
		if m.Attempt > 0 {
			known = -1
		}
	}
	var sent startRecord
	for {
		if !l.awaitConfirmed() {
			return false // the session was lost while the worker was frozen
		}
		if !l.settleStart(&sent, m.ID) {
			return false
		}
		cfg := l.config()
		route, ok := cfg.Route(m.Task)
		if !ok {
			// A Go handler registered under the task's name runs in a
			// re-executed child by default.
			_, ok = drover.LookupHandler(m.Task)
			route = drover.TaskRoute{Go: true}
		}
		if !ok {
			span.DeadLettered("no_route")
			return l.deadLetter(drover.DeadLetter{ID: m.ID, Message: &m, Raw: d.Raw, Failure: drover.Failure{
				Reason:   fmt.Sprintf("no route for task %q in queue %s (configure tasks.%s or tasks.\"*\")", m.Task, l.name, m.Task),
				ExitCode: -1, FailedAt: l.w.cfg.Clock.Now(),
			}}, "no_route")
		}
		maxAttempts := cfg.MaxAttempts
		if m.MaxAttempts > 0 {
			maxAttempts = m.MaxAttempts
		}
		if !reserved {
			// Every start is recorded with the message, so attempts
			// survive a move, a stop or a crash (attempts.go). A start
			// known to be the message's first, on a queue this owner has
			// committed since its claim, is sent without waiting: its
			// count is 1. Any other waits for its record, whose reply is
			// the attempt's number: a retry, a message another owner
			// started, and every start before this owner's first commit
			// (unless its check found the queue quiet: loopQuiet), so that
			// a message that kills its worker as it starts is counted
			// however quickly it kills (docs/decisions.md, "Issue 40: a
			// first start is recorded without waiting").
			var starts int
			if known == 0 && l.flags.Load()&(loopCommitted|loopQuiet) != 0 {
				sent = l.w.starts.send(l.name, m.ID)
				starts = 1
			} else {
				n, ok := l.recordStart(m.ID, true)
				if !ok {
					return false // aborted or lost: the next owner runs it
				}
				starts = n
			}
			known = starts
			if starts > maxAttempts {
				return l.startsUsed(s, &m, starts-1, maxAttempts, cfg, span)
			}
			if m.Attempt != starts-1 {
				m.Attempt = starts - 1
				envelope = nil // the executor encodes the envelope with the attempt
			}
		}
		reserved = false
		res, cancel := l.attempt(ctx, &m, envelope, route, cfg)
		span.Attempt(m.Attempt, string(res.Outcome), res.ExitCode, res.Reason)
		switch res.Outcome {
		case executor.OutcomeSuccess:
			// A finished message needs no count: a start still held is
			// dropped. One already sent is not waited for: the trim that
			// deletes the message's field waits for it (starter.settled).
			l.w.starts.drop(sent)
			s.finished = l.finishedOf(&m, res, cfg)
			return true
		case executor.OutcomeAborted:
			if l.taskCtx.Err() != nil || l.lost.Load() {
				return false // the queue's own abort: the next owner runs it
			}
			// The executor aborted the attempt by itself while the queue
			// runs on: the task lease went stale before the task started
			// (its renewal waits for a session that heard from ZooKeeper
			// lately), or its pool or the executor was closing. The
			// attempt did not count (its recorded start is taken by the
			// next attempt: reserved), and the message runs again here:
			// reported "not finished here", it stayed unfinished in the
			// loop while the messages behind it ran, and the queue's
			// offset never passed it (a chaos run's ordered queue ran
			// everything behind its head, which never ran). The next
			// attempt waits for a fresh lease; the delay keeps a closed
			// executor from spinning until the queue stops.
			reserved = true
			if !l.sleep(abortedAttemptDelay) {
				return false
			}
			continue
		}
		if l.lost.Load() {
			return false // another member owns the queue: write nothing
		}
		// A retry, a dead letter or a park must not overtake the start's
		// record: the next read would see fewer starts than were made, and
		// a record landing after a dead letter would leave a field behind.
		if !l.settleStart(&sent, m.ID) {
			return false
		}
		if res.Outcome == executor.OutcomeCancelled {
			then := cancel.resolve(cfg, l.w.cfg.Pauser != nil)
			f := cancel.failure(res.Failure(l.w.cfg.Clock.Now()), then)
			switch then {
			case CancelPark:
				return l.parkHead(s, &m, f)
			case CancelRetry:
				m.Attempt++
				setLastError(&m, f)
				envelope = nil
				if cfg.Ordered {
					continue // in place, at once
				}
				now := l.w.cfg.Clock.Now()
				span.Retried(now)
				if !l.write("schedule retry of a cancelled task", func(ctx context.Context) error {
					return l.w.cfg.Store.Retry(ctx, &m, now)
				}) {
					return false
				}
				l.w.idle.at(l.name, now)
				l.countsMoved()
				return true
			}
			span.DeadLettered("cancelled")
			return l.deadLetter(drover.DeadLetter{ID: m.ID, Message: &m, Failure: f}, "cancelled")
		}
		if m.Attempt+1 >= maxAttempts {
			f := res.Failure(l.w.cfg.Clock.Now())
			// One numbering everywhere: attempts count from 0, as in the
			// envelope, DROVER_ATTEMPT and `ctl dead ls`.
			f.Reason = fmt.Sprintf("%s (attempt %d, the last of max_attempts %d)", f.Reason, m.Attempt, maxAttempts)
			if cfg.Parks() {
				if l.w.cfg.Pauser != nil {
					return l.parkHead(s, &m, f)
				}
				l.logger().Warn("on_failure park needs a Pauser (none configured): dead-lettering the head", "id", m.ID)
			}
			span.DeadLettered(string(res.Outcome))
			return l.deadLetter(drover.DeadLetter{ID: m.ID, Message: &m, Failure: f}, string(res.Outcome))
		}
		delay := l.backoff(cfg, m.Attempt+1)
		m.Attempt++
		setLastError(&m, res.Failure(l.w.cfg.Clock.Now()))
		envelope = nil // the executor encodes the updated envelope
		if cfg.Ordered {
			// Retry in place: the queue waits for this message.
			if !l.sleep(delay) {
				return false
			}
			continue
		}
		due := l.w.cfg.Clock.Now().Add(delay)
		span.Retried(due)
		if !l.write("schedule retry", func(ctx context.Context) error {
			return l.w.cfg.Store.Retry(ctx, &m, due)
		}) {
			return false
		}
		l.w.idle.at(l.name, due) // promoted when due, parked or not
		l.countsMoved()
		return true
	}
}

// recordStart records a start of message id with the message in Redis
// (with the other runners' starts, attempts.go) and returns its starts so
// far, this one included. It retries until the record is written; false
// means the tasks were aborted, the queue was lost, or (before the task
// starts: beforeStart) the queue was stopped first, and the message must
// not start here.
//
// Before its task starts, a stop of the queue (stopCtx: the member gives
// its queues up, leaves, or hands the queue over) ends the retries too,
// not only the tasks' abort: a queue stopped while Redis could not take
// the record waited for the drain timeout (30 s) before its release, for a
// task that had not started, and nobody ran the queue meanwhile. The next
// owner starts the message. A try in flight when the queue stops is let
// finish (writeWithin): cut, it could land a start that never ran, and a
// message moved often enough would use up its attempts unrun. A start
// that happened (a record sent without waiting that failed, settleStart)
// is recorded until the tasks' abort: a count that misses it would allow
// one attempt more.
func (l *queueLoop) recordStart(id string, beforeStart bool) (int, bool) {
	var starts int
	start := time.Now()
	ctx, cancel := context.WithCancel(l.taskCtx)
	defer cancel()
	if beforeStart {
		defer context.AfterFunc(l.stopCtx, cancel)()
	}
	ok := l.writeWithin(ctx, "record the start of a task", func(ctx context.Context) error {
		n, err := l.w.starts.record(ctx, l.name, id)
		starts = n
		return err
	})
	l.w.stages.startRecord.add(time.Since(start))
	return starts, ok
}

// settleStart waits for *sent, a start of message id recorded without
// waiting, and clears it. A record that failed is recorded again, waited
// for (the start happened: a count that misses it would allow one more).
// It returns false when the tasks were aborted or the queue was lost first:
// the message must not be written or started here.
func (l *queueLoop) settleStart(sent *startRecord, id string) bool {
	if sent.b == nil {
		return true
	}
	_, err := l.w.starts.wait(l.taskCtx, *sent)
	if err != nil && l.taskCtx.Err() != nil {
		return false
	}
	*sent = startRecord{}
	if err == nil {
		return true
	}
	l.logger().Warn("record the start of a task failed; recording it again", "id", id, "error", err)
	_, ok := l.recordStart(id, false)
	return ok
}

// startsUsed parks or dead-letters m, which was started `started` times,
// its max_attempts, the last time without an outcome (a worker stopped or
// crashed during the attempt, or lost the queue before writing it): it is
// not run again, and ends as if its last attempt had failed.
func (l *queueLoop) startsUsed(s *slot, m *drover.Message, started, maxAttempts int, cfg *drover.QueueConfig, span *tracing.TaskSpan) bool {
	m.Attempt = started - 1
	f := drover.Failure{
		Reason: fmt.Sprintf("started %d times, the last without an outcome; max_attempts %d (a worker stopped or crashed during an attempt)",
			started, maxAttempts),
		ExitCode: -1, FailedAt: l.w.cfg.Clock.Now(),
	}
	if cfg.Parks() {
		if l.w.cfg.Pauser != nil {
			return l.parkHead(s, m, f)
		}
		l.logger().Warn("on_failure park needs a Pauser (none configured): dead-lettering the head", "id", m.ID)
	}
	span.DeadLettered("attempts")
	return l.deadLetter(drover.DeadLetter{ID: m.ID, Message: m, Failure: f}, "attempts")
}

// attempt runs the message once and records it. When an operator cancelled
// it (Worker.Cancel), the request says who and what follows.
func (l *queueLoop) attempt(ctx context.Context, m *drover.Message, envelope []byte, route drover.TaskRoute, cfg *drover.QueueConfig) (executor.Result, cancelRequest) {
	// The attempt's task, state and metric labels in one allocation.
	a := &attemptParts{}
	t, ts := &a.task, &a.state
	*t = executor.Task{
		Message: m, Envelope: envelope, Queue: l.name, Route: route,
		Timeout: cfg.Timeout.Std(), Limits: cfg.Limits, User: cfg.User, Group: cfg.Group,
		PoolSize: l.w.cfg.Capacity, // one pool per route serves every queue: sized by the worker's slots
	}
	now := l.w.cfg.Clock.Now()
	*ts = TaskState{ID: m.ID, Task: m.Task, Attempt: m.Attempt, Position: m.Position, Started: now}
	if !route.Inline {
		// An inline handler cannot be killed and has no process id: the
		// cancel and OnStart are a subprocess's (allocations an inline
		// task would make for nothing).
		ts.cancel = make(chan struct{})
		t.Cancel = ts.cancel
		t.OnStart = func(pid int) {
			l.mu.Lock()
			ts.PID = pid
			l.mu.Unlock()
		}
	}
	l.mu.Lock()
	if l.inflight == nil {
		l.inflight = map[string]*TaskState{} // made for a queue's first task
	}
	l.inflight[m.ID] = ts
	l.mu.Unlock()
	// One array for the task's three metric calls: queue, task, outcome.
	a.labels = [3]metrics.Label{metrics.L("queue", l.name), metrics.L("task", m.Task), {}}
	labels := a.labels[:]
	if m.Attempt == 0 {
		enq := time.UnixMicro(int64(m.Position))
		l.w.cfg.Metrics.AddSample(metrics.QueueLatency, ms(now.Sub(enq)), labels[:1:1]...)
	}
	res := l.w.cfg.Executor.Execute(ctx, t)
	l.mu.Lock()
	delete(l.inflight, m.ID)
	l.mu.Unlock()

	l.w.cfg.Metrics.AddSample(metrics.TaskDuration, ms(res.Duration), labels[:2:2]...)
	labels[2] = metrics.L("outcome", string(res.Outcome))
	l.w.cfg.Metrics.IncrCounter(metrics.TasksTotal, 1, labels...)
	if res.Outcome != executor.OutcomeSuccess && res.Outcome != executor.OutcomeAborted {
		l.logger().Info("task attempt failed", "id", m.ID, "task", m.Task, "attempt", m.Attempt,
			"outcome", res.Outcome, "exit_code", res.ExitCode, "reason", res.Reason)
	}
	var cancel cancelRequest
	if res.Outcome == executor.OutcomeCancelled {
		cancel = l.cancelOf(ts)
	}
	return res, cancel
}

// attemptParts is what an attempt allocates, as one allocation (they
// were three: the task, its state and the labels' array): the executor's
// task, the state /debug/state shows while it runs (in the loop's
// inflight map until it ends), and the labels of its metric calls.
type attemptParts struct {
	task   executor.Task
	state  TaskState
	labels [3]metrics.Label
}

// backoff returns the delay before retry number n, with jitter.
func (l *queueLoop) backoff(cfg *drover.QueueConfig, n int) time.Duration {
	d := cfg.Backoff.Delay(n)
	if j := cfg.Backoff.Jitter; j > 0 {
		d += time.Duration(float64(d) * j * l.w.cfg.Jitter())
	}
	return d
}

// abortedAttemptDelay is how long a message waits before it runs again
// after an attempt the executor aborted by itself (runMessage).
const abortedAttemptDelay = 50 * time.Millisecond

// sleep waits d unless the queue stops first; it reports whether it slept
// the whole time.
func (l *queueLoop) sleep(d time.Duration) bool {
	t := l.w.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-l.stopCtx.Done():
		return false
	case <-l.taskCtx.Done():
		return false
	}
}

func (l *queueLoop) deadLetter(dl drover.DeadLetter, reason string) bool {
	if l.lost.Load() {
		return false
	}
	l.logger().Warn("dead-lettering message", "id", dl.ID, "reason", dl.Failure.Reason)
	l.w.cfg.Metrics.IncrCounter(metrics.DeadTotal, 1, metrics.L("queue", l.name), metrics.L("reason", reason))
	ok := l.write("dead-letter", func(ctx context.Context) error {
		return l.w.cfg.Store.DeadLetter(ctx, l.name, dl)
	})
	if ok {
		l.countsMoved()
	}
	return ok
}

// write retries a Redis write with backoff until it succeeds, the tasks are
// aborted, or the queue is lost. It reports whether the write happened.
func (l *queueLoop) write(what string, f func(ctx context.Context) error) bool {
	return l.writeWithin(l.taskCtx, what, f)
}

// writeWithin is write, given up as well when within ends (within is
// taskCtx or a context that ends with it) before a try or between tries.
// A try in flight is not cut by within: its outcome is what it was sent
// for (a start record that lands starts its task, rather than counting a
// start that never ran).
func (l *queueLoop) writeWithin(within context.Context, what string, f func(ctx context.Context) error) bool {
	delay := 100 * time.Millisecond
	for {
		if !l.awaitConfirmed() || within.Err() != nil {
			return false
		}
		ctx, cancel := context.WithTimeout(l.taskCtx, writeTimeout)
		err := f(ctx)
		cancel()
		if err == nil {
			return true
		}
		if errors.Is(err, context.Canceled) && l.taskCtx.Err() != nil {
			return false
		}
		l.logger().Warn(what+" failed; retrying", "error", err, "in", delay)
		t := l.w.cfg.Clock.NewTimer(delay)
		select {
		case <-t.C():
		case <-within.Done():
			t.Stop()
			return false
		}
		if delay < 5*time.Second {
			delay *= 2
		}
	}
}

// awaitConfirmed waits while the freeze guard holds the worker (a freeze was
// seen and the session is not confirmed yet) and reports whether the queue
// is still this worker's. A task that ended during a freeze — killed by the
// task lease, typically — must not lead to a Redis write (a retry, a dead
// letter) or a new attempt before the worker knows it still owns the
// queue: after a freeze past the session timeout another member does, and
// the abort that follows cancels taskCtx.
func (l *queueLoop) awaitConfirmed() bool {
	for l.w.freezePending() && l.taskCtx.Err() == nil && !l.lost.Load() {
		t := time.NewTimer(freezeBeat)
		select {
		case <-l.taskCtx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return !l.lost.Load() && l.taskCtx.Err() == nil
}
