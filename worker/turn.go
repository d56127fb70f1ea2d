package worker

import (
	"context"

	"github.com/hashicorp/go-hclog"
)

// A turn is the life of one run goroutine of a queue loop, from its start
// (a signal) to its parking. The contexts that stop the loop and kill its
// tasks live for a turn only: a parked queue holds no context (a context
// with children keeps a map and a channel for good), no results channel and
// no runner. stop and abortTasks are flags that outlive the turns; each turn
// starts with its contexts cancelled as the flags say.

// beginTurn creates the turn's contexts and results channel; run
// goroutine only.
func (l *queueLoop) beginTurn() {
	stopCtx, cancelStop := context.WithCancel(context.Background())
	taskCtx, cancelTasks := context.WithCancel(context.Background())
	l.turnMu.Lock()
	l.stopCtx, l.cancelStop = stopCtx, cancelStop
	l.taskCtx, l.cancelTasks = taskCtx, cancelTasks
	if l.stopped {
		cancelStop()
	}
	if l.aborted {
		cancelTasks()
	}
	l.turnMu.Unlock()
	if l.results == nil {
		l.results = make(chan taskDone)
	}
	l.iterations = 0
	// While parked, the idle scheduler holds the queue's due times; the
	// loop's own promotion every PromoteInterval counts from the start of
	// the turn. Counted from the last promotion, a queue that parks
	// between messages (a message a second, 10,000 such queues) promoted
	// on the second iteration of every turn: a round trip per message
	// that found nothing due (a goroutine dump showed 606 loops of one
	// worker waiting for a Redis connection in promote).
	if !l.lastPromote.IsZero() {
		l.lastPromote = l.w.loopTime(l.w.cfg.Clock.Now())
	}
}

// endTurn drops the turn's contexts before the loop parks (no task runs).
func (l *queueLoop) endTurn() {
	l.turnMu.Lock()
	l.cancelStop()
	l.cancelTasks()
	l.stopCtx, l.taskCtx, l.cancelStop, l.cancelTasks = nil, nil, nil, nil
	l.turnMu.Unlock()
	l.results = nil
}

// stop makes the loop stop fetching and dispatching, now and in every later
// turn.
func (l *queueLoop) stop() { l.latch(&l.stopped, &l.cancelStop) }

// abortTasks kills the loop's in-flight tasks, now and in every later turn.
func (l *queueLoop) abortTasks() { l.latch(&l.aborted, &l.cancelTasks) }

// latch sets flag, which outlives the turns (beginTurn reads it), and calls
// cancel, the running turn's function that the flag stands for (nil while
// the loop is parked).
func (l *queueLoop) latch(flag *bool, cancel *context.CancelFunc) {
	l.turnMu.Lock()
	defer l.turnMu.Unlock()
	*flag = true
	if *cancel != nil {
		(*cancel)()
	}
}

// logger is the queue's logger. It is made when something is logged: a
// logger kept per queue would cost every parked queue its memory.
func (l *queueLoop) logger() hclog.Logger { return l.w.cfg.Logger.With("queue", l.name) }
