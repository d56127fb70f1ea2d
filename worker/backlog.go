package worker

import (
	"context"
	"slices"
	"sync"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/metrics"
)

// BatchBacklogReader is a BacklogReader that measures many queues in one
// round trip. With it the queue loops' backlog reads go through the
// worker's one backlogger (below), off the loops' own goroutines.
type BatchBacklogReader interface {
	// BacklogMany returns, in the order of queues, what Backlog returns for
	// each queue after offsets[i].
	BacklogMany(ctx context.Context, queues []string, offsets []drover.Position) ([]drover.Backlog, []error)
}

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
type backlogger struct {
	br BatchBacklogReader
	m  metrics.Recorder

	mu      sync.Mutex
	pending []backlogAsk
	asked   map[*queueLoop]int // loop → index in pending: one read per loop per round
	running bool

	rounds, reads int // round trips and queues measured, for tests
}

type backlogAsk struct {
	l   *queueLoop
	off drover.Position
}

func newBacklogger(br BatchBacklogReader, m metrics.Recorder) *backlogger {
	return &backlogger{br: br, m: m, asked: map[*queueLoop]int{}}
}

// ask queues a backlog read of l after off; it never blocks. A loop asked
// again before its read is sent is measured once, after its latest offset.
func (b *backlogger) ask(l *queueLoop, off drover.Position) {
	b.mu.Lock()
	defer b.mu.Unlock()
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
			continue // the next BacklogInterval reads it again
		}
		a.l.setBacklog(res[i])
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
