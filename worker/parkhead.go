package worker

import (
	"context"
	"fmt"

	"github.com/drover-dev/drover"
)

// Parking an ordered queue at a failed head (drover.OnFailurePark;
// docs/one-queue-per-key.md, "Parking a queue"). When the head message of
// an ordered queue with on_failure park has used its attempts, its runner
// writes the queue's pause flag (drover.Pause with Head set) instead of a
// dead letter, and the message stays in the log, uncommitted. The run
// goroutine then drops what it had read (rewindToParkedHead), so that after
// the pause it reads the head again from the log — with the args an
// operator may have edited, or the next message when the operator moved
// the head to the dead letters.
//
// Order does not rest on timing: the head is finished only by a success or
// by an operator's dead-lettering (which removes it from the log), so a
// later message cannot start before it is resolved, whoever owns the queue.
// The hold below only keeps the loop from running the head again in the
// moment between the pause's write and the worker seeing the flag through
// its watch; a hold lifted early runs the head once more, never a later
// message.

// Pauser writes a queue's pause flag (fleet.Current.SetPause).
type Pauser interface {
	SetPause(ctx context.Context, scope drover.PauseScope, name string, p drover.Pause) error
}

// PauserFunc is a func as a Pauser.
type PauserFunc func(ctx context.Context, scope drover.PauseScope, name string, p drover.Pause) error

// SetPause calls f.
func (f PauserFunc) SetPause(ctx context.Context, scope drover.PauseScope, name string, p drover.Pause) error {
	return f(ctx, scope, name, p)
}

// parkHead pauses the queue at m, which used its attempts (f is its last
// failure). It reports false, as an aborted message: the message is not
// finished here. On success s.parkedUnder is set and the run goroutine
// rewinds.
func (l *queueLoop) parkHead(s *slot, m *drover.Message, f drover.Failure) bool {
	before := l.w.pause.Load()
	p := drover.Pause{
		By: "worker " + l.w.cfg.Member, At: l.w.cfg.Clock.Now().UTC(),
		Reason: fmt.Sprintf("parked at failed message %s (task %s): %s", m.ID, m.Task, f.Reason),
		Head: &drover.ParkedHead{
			ID: m.ID, Position: m.Position, Task: m.Task, Attempts: m.Attempt + 1,
			Error: f.Reason, ExitCode: f.ExitCode,
		},
	}
	if !l.write("park the queue at its failed head", func(ctx context.Context) error {
		return l.w.cfg.Pauser.SetPause(ctx, drover.PauseQueue, l.name, p)
	}) {
		return false // aborted or lost: the next owner runs the head again
	}
	l.logger().Warn("queue parked at its failed head: nothing behind it runs until an operator resolves it",
		"id", m.ID, "task", m.Task, "attempts", m.Attempt+1, "reason", f.Reason)
	s.parkedUnder = before
	l.countsMoved() // paused, it reads as it parks anyway; when in doubt, read
	// Then the head's attempts go with it into its envelope (what `ctl
	// job`, `ctl messages` and a skip's dead letter show) and its recorded
	// starts are forgotten, so that a resume or a retry runs it with fresh
	// attempts. After the pause, not before: a worker that dies between
	// the two leaves the head parked, and its next start after a resume
	// finds its starts used and parks it again (this time forgetting
	// them), where the other order would run a poison head max_attempts
	// more times unparked.
	parked := *m
	parked.Position = 0
	setLastError(&parked, f)
	if raw, err := parked.MarshalJSON(); err != nil {
		l.logger().Warn("encode the parked head's envelope", "id", m.ID, "error", err)
	} else {
		l.write("record the parked head", func(ctx context.Context) error {
			return l.w.cfg.Store.ParkHead(ctx, l.name, m.ID, s.d.Raw, raw)
		})
	}
	return false
}

// rewindToParkedHead drops what the loop had read from the parked head on
// (an ordered queue runs one message at a time: the head is the first
// pending slot) and holds the queue until its pause is seen and lifted.
// Run goroutine only.
func (l *queueLoop) rewindToParkedHead(s *slot) {
	x := l.extra()
	x.holding, x.sawPause, x.holdPause = true, false, s.parkedUnder
	p := &l.prog
	clear(p.pending)
	p.pending, p.next = p.pending[:0], 0
	l.fetched = p.offset
	l.caughtUp = false
}

// held reports whether the park hold keeps the queue from starting tasks:
// from the park until the worker has seen the queue's pause flag lifted
// (or a newer pause state without it, for a flag lifted before the
// worker saw it set). Run goroutine only.
func (l *queueLoop) held() bool {
	x := l.extras
	if x == nil || !x.holding {
		return false
	}
	p := l.w.pause.Load()
	if p.Queues[l.name] {
		x.sawPause = true
		return true
	}
	if x.sawPause || p != x.holdPause {
		x.holding, x.holdPause = false, nil
		l.dropExtras()
		return false
	}
	return true
}

// blockedNow reports whether the queue may not start tasks now: paused,
// suspended, frozen, or held at its parked head. Run goroutine only.
func (l *queueLoop) blockedNow() bool {
	h := l.held() // first: it must see the flag while the worker is paused
	return l.w.blocked(l.name) || h
}
