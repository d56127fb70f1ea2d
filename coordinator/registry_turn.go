package coordinator

import "sync"

// registryTurn is held by the session's packed registry writers
// (CreateMany, RetireMany's writes) from their bucket reads to their
// multis' replies, so that the family registrar's registrations and its
// retire sweep, which run at once and touch most of the same buckets,
// never fail each other's multis on a bucket version (docs/decisions.md,
// "Issue 40: the registry's writers take turns").
//
// A registration goes first: a new key waits on it to start, a retirement
// waits for nobody. A registration waiting keeps the next retire from
// taking the turn, and a retire sweep holding it hands it over between
// waves of its multis (yield), so a registration waits for one wave, not
// for a sweep step of 2,000 queues (docs/decisions.md, "Issue 40: a
// registration does not wait for a retire step").
type registryTurn struct {
	mu       sync.Mutex
	changed  sync.Cond // held or waiting changed
	held     bool
	waiting  int // registrations waiting for the turn
	retiring int // retirements waiting for the turn
}

// lock locks mu, the zero value ready for use.
func (t *registryTurn) lock() {
	t.mu.Lock()
	if t.changed.L == nil {
		t.changed.L = &t.mu
	}
}

// lockRegister takes the turn for a registration, ahead of retirements.
func (t *registryTurn) lockRegister() {
	t.lock()
	defer t.mu.Unlock()
	t.waiting++
	for t.held {
		t.changed.Wait()
	}
	t.waiting--
	t.held = true
}

// lockRetire takes the turn for a retirement once no registration waits.
func (t *registryTurn) lockRetire() {
	t.lock()
	defer t.mu.Unlock()
	t.retiring++
	for t.held || t.waiting > 0 {
		t.changed.Wait()
	}
	t.retiring--
	t.held = true
}

// waiters returns the registrations and retirements waiting.
func (t *registryTurn) waiters() (registrations, retirements int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.waiting, t.retiring
}

// unlock gives the turn up.
func (t *registryTurn) unlock() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.held = false
	t.changed.Broadcast()
}

// yield hands a retirement's turn to the registrations waiting, if any,
// and takes it back after them. It reports whether it did (the buckets
// the retirement read may have changed meanwhile).
func (t *registryTurn) yield() bool {
	t.lock()
	if t.waiting == 0 {
		t.mu.Unlock()
		return false
	}
	t.held = false
	t.changed.Broadcast()
	t.retiring++
	for t.held || t.waiting > 0 {
		t.changed.Wait()
	}
	t.retiring--
	t.held = true
	t.mu.Unlock()
	return true
}
