package queue

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-dev/drover"
)

// knownFor is how long a producer keeps a queue it added to the registry
// (Store.known) without sending to it: one to two of these after its last
// message, the queue's next message sends the SADD again.
const knownFor = 10 * time.Minute

// recent is a concurrent map that forgets what was not used for a while:
// an entry stays while it is stored or loaded at least once every period,
// and goes between one and two periods after its last use. A producer's
// memory of its queues (Store.known, the routes of routeCache) is one: a
// per-key fleet's keys come and go, and a producer that remembered every
// queue it ever sent to would grow for as long as it runs. Forgetting a
// queue costs its next message what its first one cost (the registry's
// SADD, the route's GET).
//
// It keeps two generations, each a sync.Map: entries are stored in the
// current one, an entry loaded from the previous one is copied into the
// current one, and every period the previous one is dropped and the
// current one becomes the previous. Loads and stores take no lock; the
// clock is read on each (the injected one, so that a test moves it).
// hashicorp/golang-lru's expirable LRU does this by entry with a lock on
// every call and its own clock (time.Now), which a test cannot move
// (docs/decisions.md, "Issue 43: a producer forgets the queues it no
// longer sends to").
type recent[V any] struct {
	clock  drover.Clock
	period time.Duration

	cur, old atomic.Pointer[sync.Map]
	turnAt   atomic.Int64 // unix ns of the next turn
	turning  sync.Mutex   // held while turning, so that one caller turns
}

// newRecent returns an empty recent reading clock, whose entries go one to
// two periods after their last use.
func newRecent[V any](clock drover.Clock, period time.Duration) *recent[V] {
	r := &recent[V]{clock: clock, period: period}
	r.cur.Store(new(sync.Map))
	r.old.Store(new(sync.Map))
	r.turnAt.Store(clock.Now().Add(period).UnixNano())
	return r
}

// Load returns the entry of key and whether there is one, keeping it for
// another period.
func (r *recent[V]) Load(key string) (V, bool) {
	cur := r.current()
	if v, ok := cur.Load(key); ok {
		return v.(V), true
	}
	if v, ok := r.old.Load().Load(key); ok {
		cur.Store(key, v)
		return v.(V), true
	}
	var zero V
	return zero, false
}

// Store sets the entry of key.
func (r *recent[V]) Store(key string, v V) { r.current().Store(key, v) }

// Delete removes the entry of key.
func (r *recent[V]) Delete(key string) {
	r.current().Delete(key)
	r.old.Load().Delete(key)
}

// Len counts the entries held (those of both generations; one loaded since
// the last turn counts twice), walking both maps: for tests.
func (r *recent[V]) Len() int {
	n := 0
	for _, m := range []*sync.Map{r.cur.Load(), r.old.Load()} {
		m.Range(func(any, any) bool { n++; return true })
	}
	return n
}

// current returns the current generation, turning the generations first
// when a period has passed since the last turn (dropping both when two
// have: no call stored or loaded anything since the previous turn). A
// store racing a turn may land in the generation just made the previous
// one: it is still found, and copied forward when loaded.
func (r *recent[V]) current() *sync.Map {
	now := r.clock.Now().UnixNano()
	if now >= r.turnAt.Load() && r.turning.TryLock() {
		if at := r.turnAt.Load(); now >= at {
			if now >= at+r.period.Nanoseconds() { // no call for a period: everything held is that old
				r.old.Store(new(sync.Map))
			} else {
				r.old.Store(r.cur.Load())
			}
			r.cur.Store(new(sync.Map))
			r.turnAt.Store(now + r.period.Nanoseconds())
		}
		r.turning.Unlock()
	}
	return r.cur.Load()
}
