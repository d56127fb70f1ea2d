package worker

import "github.com/drover-dev/drover"

// progress tracks fetched messages in position order and finds the committed
// offset: the highest position at or below which every fetched message is
// done. It is owned by one queue loop goroutine.
type progress struct {
	pending []*slot // fetched, not yet below the offset, in position order
	next    int     // index in pending of the first slot not yet dispatched
	offset  drover.Position
	offID   string
}

// slot is one fetched message.
type slot struct {
	d    delivery
	done bool
	// parkedUnder, when set, says the message used its attempts and the
	// queue paused itself at it (parkhead.go): the worker's pause state
	// just before the pause was written. The loop reads the message
	// again after the pause.
	parkedUnder *PauseState
	// finished is what a succeeded message adds to its outcome record,
	// when the queue keeps records; set by the runner.
	finished finished
}

// delivery is a log entry with its envelope decoded.
type delivery struct {
	Position drover.Position
	ID       string
	Raw      []byte          // the envelope as stored
	Message  *drover.Message // nil when Err is set
	Err      error           // wraps drover.ErrPoison when the envelope is undecodable
	Starts   int             // the message's starts recorded when it was read; -1: not read
}

// add decodes and appends fetched entries (positions must increase);
// starts says whether they were read with their recorded starts.
func (p *progress) add(es []drover.LogEntry, starts bool) {
	for i := range es {
		e := &es[i]
		m, err := e.Decode()
		n := e.Starts
		if !starts {
			n = -1
		}
		p.pending = append(p.pending, &slot{d: delivery{Position: e.Position, ID: e.ID, Raw: e.Raw, Message: m, Err: err, Starts: n}})
	}
}

// undispatched returns how many fetched slots wait for dispatch.
func (p *progress) undispatched() int { return len(p.pending) - p.next }

// takeNext returns the next slot to dispatch.
func (p *progress) takeNext() *slot {
	s := p.pending[p.next]
	p.next++
	return s
}

// complete marks s done and advances the offset over the done prefix. It
// reports whether the offset moved.
func (p *progress) complete(s *slot) bool {
	s.done = true
	moved := false
	for len(p.pending) > 0 && p.pending[0].done {
		p.offset = p.pending[0].d.Position
		p.offID = p.pending[0].d.ID
		p.pending[0] = nil
		p.pending = p.pending[1:]
		p.next--
		moved = true
	}
	return moved
}

// inFlight returns how many dispatched slots are not done.
func (p *progress) inFlight() int {
	n := 0
	for _, s := range p.pending[:p.next] {
		if !s.done {
			n++
		}
	}
	return n
}
