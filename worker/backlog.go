package worker

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/metrics"
)

// maxBacklogBatch is the most queues one round trip of the backlogger
// measures.
const maxBacklogBatch = 1000

// backlogger publishes the queue loops' backlog gauges: a loop hands it the
// queue and its done offset and goes on at once (to park, or to its next
// message); the backlogger measures every queue handed to it while its
// previous round trip was in flight in one BacklogMany, and sets their
// gauges. With 10,000 busy queues each loop read its own backlog once per
// BacklogInterval before parking: 500 round trips a second per worker, each
// holding one of the Redis client's connections, and a goroutine dump
// showed 1,266 loops waiting for a connection there — with the batched
// reads of every other queue waiting behind them. Its goroutine runs while
// requests wait and exits when none does.
//
// A queue that cannot run (paused, or its worker suspended) and has lag
// parks once and publishes nothing more by itself, so its oldest age would
// freeze at the value of that park (and its gauges expire) while the
// message keeps waiting: the "oldest message too old" alert could not fire
// for a paused queue. The backlogger keeps such queues (held) and measures
// them again every BacklogInterval, with the other asks, until they run
// again or end; one timer per worker, and only while a blocked queue has
// lag. (A Log without BacklogMany, a test fake, has no backlogger: its
// blocked queues publish as they park only.)
type backlogger struct {
	br Store
	m  metrics.Recorder

	mu         sync.Mutex
	pending    []backlogAsk
	asked      map[*queueLoop]int // loop → index in pending: one read per loop per round
	running    bool
	held       map[*queueLoop]drover.Position // blocked queues with lag → their offset
	refreshing bool                           // the held queues' timer runs

	rounds, reads int // round trips and queues measured, for tests

	// skipped: the caught-up parks that needed no read (knownEmpty); a
	// read each, every BacklogInterval, before.
	skipped atomic.Int64
}

type backlogAsk struct {
	l   *queueLoop
	off drover.Position
}

func newBacklogger(br Store, m metrics.Recorder) *backlogger {
	return &backlogger{br: br, m: m, asked: map[*queueLoop]int{}, held: map[*queueLoop]drover.Position{}}
}

// ask queues a backlog read of l after off; it never blocks. A loop asked
// again before its read is sent is measured once, after its latest offset.
func (b *backlogger) ask(l *queueLoop, off drover.Position) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.askLocked(l, off)
}

func (b *backlogger) askLocked(l *queueLoop, off drover.Position) {
	if i, ok := b.asked[l]; ok {
		b.pending[i].off = off
		return
	}
	b.asked[l] = len(b.pending)
	b.pending = append(b.pending, backlogAsk{l: l, off: off})
	if !b.running {
		b.running = true
		go b.run()
	}
}

// run measures the waiting queues, a round trip at a time, until none waits.
func (b *backlogger) run() {
	for {
		b.mu.Lock()
		if len(b.pending) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		n := min(len(b.pending), maxBacklogBatch)
		batch := slices.Clone(b.pending[:n])
		b.pending = slices.Delete(b.pending, 0, n)
		clear(b.asked)
		for i, a := range b.pending {
			b.asked[a.l] = i
		}
		b.rounds++
		b.reads += n
		b.mu.Unlock()
		b.send(batch)
	}
}

// send measures batch in one call and sets the gauges of the queues still
// owned.
func (b *backlogger) send(batch []backlogAsk) {
	queues := make([]string, 0, len(batch))
	offsets := make([]drover.Position, 0, len(batch))
	live := batch[:0:0]
	for _, a := range batch {
		if a.l.phase.Load() == phaseEnded {
			continue // stopped meanwhile: its gauges are not ours to set
		}
		queues = append(queues, a.l.name)
		offsets = append(offsets, a.off)
		live = append(live, a)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	res, errs := b.br.BacklogMany(ctx, queues, offsets)
	cancel()
	for i, a := range live {
		if i >= len(res) || i >= len(errs) || errs[i] != nil || a.l.phase.Load() == phaseEnded {
			a.l.flags.And(^uint32(loopCountsZero)) // unknown: read again at the next BacklogInterval
			if a.l.w.blocked(a.l.name) {
				b.hold(a.l, a.off) // a blocked queue's own loop does not ask again
			}
			continue // the next BacklogInterval reads it again
		}
		a.l.setBacklog(res[i])
		if res[i].Lag > 0 && a.l.w.blocked(a.l.name) {
			b.hold(a.l, a.off)
		}
	}
}

// hold keeps l, blocked with lag after off, to be measured again every
// BacklogInterval while it stays blocked, and starts the timer.
func (b *backlogger) hold(l *queueLoop, off drover.Position) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held[l] = off
	if !b.refreshing {
		b.refreshing = true
		go b.refresh(l.w.cfg.Clock, l.w.cfg.BacklogInterval)
	}
}

// refresh asks again, every interval, for the backlog of the held queues
// still blocked; it forgets those that run again or ended (a queue that
// runs publishes its own backlog), and exits when none is held.
func (b *backlogger) refresh(clock drover.TimerClock, every time.Duration) {
	for {
		<-clock.NewTimer(every).C()
		b.mu.Lock()
		for l, off := range b.held {
			delete(b.held, l) // held again by send while still blocked with lag
			if l.phase.Load() != phaseEnded && l.w.blocked(l.name) {
				b.askLocked(l, off)
			}
		}
		if len(b.held) == 0 && !b.running {
			b.refreshing = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
	}
}

// stats returns the round trips and queue reads sent so far, and the reads
// that caught-up queues did not need (knownEmpty).
func (b *backlogger) stats() (rounds, reads, skipped int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rounds, b.reads, int(b.skipped.Load())
}

// setBacklog sets the queue's backlog gauges and the lag State shows.
func (l *queueLoop) setBacklog(b drover.Backlog) {
	q := metrics.L("queue", l.name)
	m := l.w.cfg.Metrics
	m.SetGauge(metrics.Lag, float32(b.Lag), q)
	m.SetGauge(metrics.OldestAge, float32(b.OldestAge.Seconds()), q)
	m.SetGauge(metrics.Delayed, float32(b.Delayed), q)
	m.SetGauge(metrics.Dead, float32(b.Dead), q)
	l.mu.Lock()
	l.snap.Lag = b.Lag
	l.mu.Unlock()
	if b.Delayed != 0 || b.Dead != 0 {
		l.flags.And(^uint32(loopCountsZero))
		return
	}
	for {
		f := l.flags.Load()
		if f&loopCountsMoved != 0 || l.flags.CompareAndSwap(f, f|loopCountsZero) {
			return // moved since the ask: this read may predate the change
		}
	}
}

// What a caught-up queue knows of its delayed and dead counts lives in
// queueLoop.flags (the loop record has no room for another field: it sits
// at its 448-byte size class). A read that found neither delayed nor dead
// messages sets loopCountsZero, unless loopCountsMoved was set since the
// read was asked; everything the owner sees that can add a delayed message
// or a dead letter (countsMoved) sets loopCountsMoved and clears
// loopCountsZero. The bits above loopResetsShift count the BacklogIntervals
// since the last read at which the gauges were set again without one.
const (
	loopResetsShift = 8
	loopResetsMax   = 1<<(32-loopResetsShift) - 1
)

// countsMoved marks that the queue's delayed or dead count may have
// changed since its last backlog read: its next park reads it (at most
// once per BacklogInterval, as before). Called after the change reached
// Redis (a retry or dead letter written, a promotion made) or was learnt
// (a wake-up or a check carrying a due time), so that a read asked after
// it sees the change and a read asked before it does not count. Any
// goroutine.
func (l *queueLoop) countsMoved() {
	l.flags.Or(loopCountsMoved)
	l.flags.And(^uint32(loopCountsZero))
}

// countsAsked notes that a backlog read is asked now: what moved before it
// is in it, and no local re-set was made since it. Run goroutine.
func (l *queueLoop) countsAsked() {
	for {
		f := l.flags.Load()
		if l.flags.CompareAndSwap(f, f&^(loopCountsMoved|loopResetsMax<<loopResetsShift)) {
			return
		}
	}
}

// backlogEvery is how long after its last backlog read a running queue
// reads it again: BacklogInterval, or BacklogRefresh while it is caught up
// (nothing read and not started) and its last read found nothing delayed
// or dead with nothing moved since. A busy key runs one message per turn
// and its first iteration after a BacklogInterval read the backlog before
// the message had finished — the read that said lag 1 (the message
// running), 0, 0, and that the park after it set to 0 again. A caught-up
// queue's task that runs long shows in its lag and oldest age at the
// refresh. Run goroutine.
func (l *queueLoop) backlogEvery() time.Duration {
	if l.caughtUp && l.prog.undispatched() == 0 && l.flags.Load()&loopCountsZero != 0 {
		return l.w.cfg.BacklogRefresh
	}
	return l.w.cfg.BacklogInterval
}

// knownEmpty reports whether a caught-up queue, since BacklogInterval or
// more after its last backlog read asked, may skip the read: the read
// found nothing delayed or dead, nothing the owner saw since could have
// added anything, and BacklogRefresh has not passed (what another process
// does, an operator's purge, a revoke, shows by then). Skipping, it sets
// the gauges again from what it knows (all 0) at most once per
// BacklogInterval since the read, so that the expiring gauges stay
// (metrics.DefaultGaugeRetention) without a SetGauge per park. Run
// goroutine.
func (l *queueLoop) knownEmpty(since time.Duration) bool {
	c := l.w.cfg
	if l.flags.Load()&loopCountsZero == 0 || since >= c.BacklogRefresh {
		return false
	}
	l.w.backlogs.skipped.Add(1)
	n := uint32(min(since/c.BacklogInterval, loopResetsMax))
	for {
		f := l.flags.Load()
		if f>>loopResetsShift >= n || f&loopCountsZero == 0 {
			return true // set again in this interval already, or moved just now (read next park)
		}
		if l.flags.CompareAndSwap(f, f&^(loopResetsMax<<loopResetsShift)|n<<loopResetsShift) {
			break
		}
	}
	q := metrics.L("queue", l.name)
	m := c.Metrics
	m.SetGauge(metrics.Lag, 0, q)
	m.SetGauge(metrics.OldestAge, 0, q)
	m.SetGauge(metrics.Delayed, 0, q)
	m.SetGauge(metrics.Dead, 0, q)
	return true
}
