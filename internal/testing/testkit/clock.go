package testkit

import (
	"sync"
	"time"

	"github.com/drover-dev/drover"
)

// Clock is a fake drover.TimerClock: time stands still until Advance, which
// fires the timers that have come due. It is safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*timer]bool // active timers
}

// NewClock returns a Clock reading start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start, timers: map[*timer]bool{}}
}

var _ drover.TimerClock = (*Clock)(nil)

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t without firing timers (for code that only reads
// Now).
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Advance moves the clock forward by d and fires every active timer due by
// then.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for t := range c.timers {
		if !t.at.After(c.now) {
			c.fireLocked(t)
		}
	}
}

// Timers returns how many timers are active: a goroutine waiting on one has
// armed it.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// NewTimer returns a timer firing d from now.
func (c *Clock) NewTimer(d time.Duration) drover.Timer {
	t := &timer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

func (c *Clock) fireLocked(t *timer) {
	delete(c.timers, t)
	select {
	case t.ch <- c.now:
	default:
	}
}

type timer struct {
	c  *Clock
	ch chan time.Time
	at time.Time
}

func (t *timer) C() <-chan time.Time { return t.ch }

// Stop and Reset discard a fired, unread time, as time.Timer does since Go
// 1.23.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	active := t.c.timers[t]
	delete(t.c.timers, t)
	t.drain()
	return active
}

func (t *timer) drain() {
	select {
	case <-t.ch:
	default:
	}
}

func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	active := t.c.timers[t]
	t.drain()
	t.at = t.c.now.Add(d)
	t.c.timers[t] = true
	if d <= 0 {
		t.c.fireLocked(t)
	}
	return active
}
