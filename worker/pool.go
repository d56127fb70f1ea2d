package worker

import "sync"

// pool is the worker's global task capacity, shared between queue loops with
// weighted fairness: when slots are scarce, a freed slot goes to the waiting
// queue with the fewest running tasks per unit of weight.
//
// A loop never blocks on the pool: tryAcquire either takes a slot or
// registers the loop as waiting, and a later release grants the slot to a
// waiter and calls its wake (which starts a parked loop).
type pool struct {
	mu      sync.Mutex
	free    int
	running map[string]int
	waiting []*poolWaiter
}

// poolWaiter is one queue loop's place at the pool.
type poolWaiter struct {
	queue   string
	weight  int
	granted int    // slots handed over while waiting, not yet taken
	queued  bool   // in pool.waiting
	wake    func() // called when a slot is granted; must not block
}

func newPool(capacity int) *pool {
	return &pool{free: capacity, running: map[string]int{}}
}

// tryAcquire takes a slot for w and reports whether it got one. When it did
// not, w is queued and its wake is called once a slot is granted.
func (p *pool) tryAcquire(w *poolWaiter) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.granted > 0 {
		w.granted--
		return true
	}
	if p.free > 0 && len(p.waiting) == 0 {
		p.free--
		p.running[w.queue]++
		return true
	}
	if !w.queued {
		w.queued = true
		p.waiting = append(p.waiting, w)
	}
	return false
}

// release returns a slot held by queue and grants it to the fairest waiter.
func (p *pool) release(queue string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running[queue]--; p.running[queue] <= 0 {
		delete(p.running, queue)
	}
	if len(p.waiting) == 0 {
		p.free++
		return
	}
	best := 0
	bestRunning := p.running[p.waiting[0].queue]
	for i, w := range p.waiting[1:] {
		if bestRunning == 0 {
			// Nothing does better than none running: the earliest such
			// waiter is the fairest. With thousands of busy queues
			// waiting, most run none, and the scan of every waiter per
			// release was a third of a worker's CPU.
			break
		}
		// running/weight < best's running/weight, without division.
		b := p.waiting[best]
		if r := p.running[w.queue]; r*b.weight < bestRunning*w.weight {
			best, bestRunning = i+1, r
		}
	}
	w := p.waiting[best]
	p.waiting = append(p.waiting[:best], p.waiting[best+1:]...)
	w.queued = false
	w.granted++
	p.running[w.queue]++
	w.wake()
}

// isWaiting reports whether w waits for a slot (a grant will wake it).
func (p *pool) isWaiting(w *poolWaiter) bool {
	if w == nil {
		return false // a queue that never asked for a slot
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return w.queued
}

// leave removes w from the pool: its queue stops. Slots granted but not
// taken go back to the pool.
func (p *pool) leave(w *poolWaiter) {
	if w == nil {
		return // a queue that never asked for a slot
	}
	p.mu.Lock()
	for i, x := range p.waiting {
		if x == w {
			p.waiting = append(p.waiting[:i], p.waiting[i+1:]...)
			break
		}
	}
	w.queued = false
	n := w.granted
	w.granted = 0
	p.mu.Unlock()
	for i := 0; i < n; i++ {
		p.release(w.queue)
	}
}

// inUse returns how many slots are taken.
func (p *pool) inUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.running {
		n += r
	}
	return n
}
