package worker

import (
	"slices"
	"sync"
	"time"

	"github.com/drover-dev/drover"
)

// pushes holds the messages that wake-ups carried (drover.Wakeup.Entry) for
// the loops they woke, until each loop looks at them in its next fetch
// (docs/decisions.md, "Issue 43: the wake-up carries a lone message"). A
// loop takes the ones that continue its queue exactly from its last read —
// each names the position of the message before it (Wakeup.Prev), and
// every writer of a log takes its positions from the queue's :seq, so none
// lies between — and reads only when they do not: a gap (a wake-up lost,
// one not carrying its message), or a queue not caught up since its claim
// (its reads still ask for the recorded starts). The loops' struct is full
// (footprint_test.go), so the entries live here, keyed by loop.
type pushes struct {
	mu sync.Mutex
	m  map[*queueLoop][]drover.Wakeup
}

// maxPushes is the most carried messages kept for one loop; more are not
// kept (the loop reads them).
const maxPushes = 64

// add keeps wk, which carries a message of l's queue.
func (p *pushes) add(l *queueLoop, wk drover.Wakeup) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[*queueLoop][]drover.Wakeup{}
	}
	if q := p.m[l]; len(q) < maxPushes {
		p.m[l] = append(q, wk)
	}
}

// take returns, in order, the carried messages of l that continue its
// queue exactly from after (its last read), and forgets those at or before
// the last one returned. It returns nil when the first kept one does not
// continue from after: the loop reads.
func (p *pushes) take(l *queueLoop, after drover.Position) []drover.LogEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.m[l]
	if len(q) == 0 {
		return nil
	}
	var out []drover.LogEntry
	keep := q[:0]
	for _, wk := range q {
		switch {
		case wk.Entry.Position <= after:
			// read (or taken) already
		case wk.Prev == after:
			out = append(out, *wk.Entry)
			after = wk.Entry.Position
		default:
			keep = append(keep, wk) // after a gap: it may follow a later read
		}
	}
	clear(q[len(keep):])
	if len(keep) == 0 {
		delete(p.m, l)
	} else {
		p.m[l] = keep
	}
	return out
}

// prune forgets the carried messages of l at or before after (its last
// read covered them): a wake-up that arrives after the read that found its
// message would otherwise stay kept until the queue's next message.
func (p *pushes) prune(l *queueLoop, after drover.Position) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.m[l]
	if len(q) == 0 {
		return
	}
	keep := slices.DeleteFunc(q, func(wk drover.Wakeup) bool { return wk.Entry.Position <= after })
	if len(keep) == 0 {
		delete(p.m, l)
	} else {
		p.m[l] = keep
	}
}

// forget drops what was kept for l (its loop ended).
func (p *pushes) forget(l *queueLoop) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, l)
}

// takePushed is fetch's way round a read: the messages wake-ups carried
// that continue the queue from l.fetched, once the loop reads no starts
// (it caught up since its claim: only it can have started a message after
// that, and these it has not). It reports whether it took any; the loop
// then counts as caught up, as after a read that returned less than a batch:
// the next wake-up reads again.
func (l *queueLoop) takePushed() bool {
	if l.flags.Load()&loopStartsRead == 0 {
		return false
	}
	ds := l.w.pushes.take(l, l.fetched)
	if len(ds) == 0 {
		return false
	}
	now := time.Now()
	for _, e := range ds {
		d := sinceEnqueue(now, e.Position)
		l.w.stages.enqueueToRead.add(d)
		l.w.stages.carried.add(d)
	}
	l.caughtUp = true
	l.prog.add(ds, false)
	l.fetched = ds[len(ds)-1].Position
	return true
}
