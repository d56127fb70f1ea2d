package worker

import "time"

// Parking (DESIGN.md §10): a queue loop whose work is done — caught up,
// nothing buffered or running, nothing due now — ends its run goroutine and
// keeps its state in the queueLoop ("parked"). A parked queue costs no
// goroutine, no timer and no poll; signal starts a run goroutine again.
//
// The handshake between signal and a goroutine that is parking leaves
// exactly one run goroutine, and never a signal unseen:
//
//   - signal sets the token, then tries parked → running; if that succeeds
//     it starts a run goroutine, otherwise it nudges the wake channel of the
//     goroutine that runs.
//   - a run goroutine clears the token before each iteration (so the
//     iteration sees everything signalled before), and to park it stores
//     parked, then looks at the token again: set means a signal may have
//     found the loop still running, so it takes the loop back
//     (parked → running) and goes on — unless that signal already won the
//     swap and started the next goroutine, in which case it just returns.
//
// Everything the parked loop keeps is read by the next run goroutine only
// after the atomic swap that starts it, which orders it after the parking
// goroutine's writes.

// The states of a queue loop.
const (
	phaseParked  int32 = iota // no run goroutine; signal starts one
	phaseRunning              // a run goroutine owns the loop's state
	phaseEnded                // shut down: the claim is released or lost
)

// signal makes the loop run an iteration soon: it starts the run goroutine
// of a parked loop and wakes a running one. It never blocks.
func (l *queueLoop) signal() {
	l.token.Store(true)
	if l.phase.CompareAndSwap(phaseParked, phaseRunning) {
		l.w.loopStarted()
		go l.runWoken(time.Now())
		return
	}
	l.nudge()
}

// shutDownAll makes every loop of loops shut down soon, as signal does,
// without a goroutine per loop: a loop that runs is woken (its run
// goroutine sees the stop), and the parked ones are run to their shutdown
// by at most stopConcurrency goroutines, which return when all have shut
// down. A stop or a loss of many queues at once (a rebalance handing back
// 10,000) thus costs a bounded number of goroutines while the releases of
// up to stopConcurrency queues still batch together. It never blocks.
func shutDownAll(loops []*queueLoop) {
	var parked []*queueLoop
	for _, l := range loops {
		l.token.Store(true)
		if l.phase.CompareAndSwap(phaseParked, phaseRunning) {
			l.w.loopStarted()
			parked = append(parked, l)
			continue
		}
		l.nudge()
	}
	if len(parked) == 0 {
		return
	}
	next := make(chan *queueLoop, len(parked))
	for _, l := range parked {
		next <- l
	}
	close(next)
	for range min(stopConcurrency, len(parked)) {
		go func() {
			for l := range next {
				l.run() // stopped: shuts down at once
			}
		}()
	}
}

// stopConcurrency bounds the goroutines shutDownAll starts for parked
// loops.
const stopConcurrency = 64

// runWoken is run, counting the time since the signal that started it.
func (l *queueLoop) runWoken(signalled time.Time) {
	l.w.stages.wake.add(time.Since(signalled))
	l.run()
}

// nudge wakes the run goroutine, if one runs, without starting one.
func (l *queueLoop) nudge() { wakeUp(l.wake) }

// wakeUp leaves a wake-up in ch, a channel with a buffer of one, unless one
// already waits there: wake-ups sent before the receiver looks coalesce
// into one, none is lost, and the sender never blocks.
func wakeUp(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// park ends the run goroutine's turn. It reports true when the loop is
// parked (the caller must return without touching the loop again) and false
// when a signal arrived meanwhile and the caller keeps running the loop.
func (l *queueLoop) park() bool {
	l.stopRunners()
	l.dropBuffers()
	l.parkedFetched.Store(int64(l.fetched))
	l.parkedGen.Store(l.blockGen)
	l.pendingWork.Store(l.prog.undispatched() > 0 || !l.caughtUp)
	l.phase.Store(phaseParked)
	if l.token.Load() && l.phase.CompareAndSwap(phaseParked, phaseRunning) {
		return false
	}
	return true
}

// dropBuffers lets a parking loop's buffers go: the in-flight map and the
// outcome buffer a busy turn reuses are empty now, and a parked queue keeps
// only what its next turn must know (DESIGN.md §10: idle queues cost
// nothing). Each held about 250 and 140 bytes, with the strings of the last
// record, in every queue that ever ran a task (BenchmarkRanQueueFootprint).
func (l *queueLoop) dropBuffers() {
	if len(l.outcomes) == 0 {
		l.outcomes = nil
	}
	l.mu.Lock()
	if len(l.inflight) == 0 {
		l.inflight = nil
	}
	l.mu.Unlock()
}

// parked reports whether the loop has no run goroutine now.
func (l *queueLoop) parked() bool { return l.phase.Load() == phaseParked }
