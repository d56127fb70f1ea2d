package worker

import (
	"context"
	"slices"
	"sync"
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

// stats returns the round trips and queue reads sent so far.
func (b *backlogger) stats() (rounds, reads int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rounds, b.reads
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
}
