package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/clock"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/tools/chaos/check"
)

// Key churn under chaos (issue 40, fault kind key-churn): one queue family,
// churnFamily (prefix churnPrefix, ordered, retire_after churnRetireAfter),
// whose keys are registered by their first enqueue, run a few messages, go
// idle, are retired by the rebalance leader's retire sweep, and are
// enqueued to again (which registers them anew), continuously through the
// load phase and beside the other queues and faults. Their messages go
// through the load generator, so every check (lost, overlaps of an ordered
// queue, duplicates, graceful-stop kills and repeats) covers them. Each
// key-churn fault adds a burst of churnBurst new keys at once, which
// retire in their turn.
//
// A retired key's offset node is removed, and it is created again at the
// key's next claim with a fresh version: the offset sampler leaves the
// family's keys out (versions of two lives of one key do not compare), and
// after the drain a key found retired has no final offset to check (a key
// retires only once empty); one still registered is checked as any queue.

const (
	churnFamily      = "churn"
	churnPrefix      = "c-"
	churnKeys        = 20 // keys cycling all the time
	churnBurst       = 100
	churnRetireAfter = 2 * time.Second
	// churnDedupeWindow is the churn producer's dedupe window: a key is
	// kept while a caller-chosen id of it is inside its window (enqueueing
	// that id again must stay a no-op), and every chaos message has one, so
	// a key retires churnDedupeWindow after its last enqueue. It outlasts a
	// send's retries through the longest fault (a redis-cut-all of three
	// session timeouts), so that a retried batch is still deduplicated.
	churnDedupeWindow = 30 * time.Second
	// churnStuckAfter: a key idle this long without being retired is fed
	// again (and counted): a queue whose trim failed (Redis away) keeps its
	// committed messages and is not empty until its next commit trims it.
	churnStuckAfter = churnDedupeWindow + 10*churnRetireAfter
)

// churnKey is one key's place in its cycle.
type churnKey struct {
	sent      bool // messages of the current cycle sent
	idle      bool // and all of them ran: waiting for its retirement
	idleSince time.Time
}

// churner feeds and watches the family's keys.
type churner struct {
	gen   *loadGen
	store *queue.Store // the churn keys' producer (churnDedupeWindow)
	zk    *zkClient

	mu          sync.Mutex
	keys        map[string]*churnKey // every key ever fed (cycling and burst)
	cycling     []string
	bursts      int
	retirements int // seen by the churner (Get: not found after the key ran)
	returns     int // keys enqueued to again after a retirement
	stuck       int // keys fed again after churnStuckAfter idle without retiring
	errs        int
}

// setupChurn creates the family; the run wires h.churn.
func (h *harness) setupChurn(ctx context.Context, createFamily func(context.Context, drover.FamilyConfig) error, taskArgv []string) error {
	qc := queueConfig(churnPrefix, true, taskArgv)
	qc.Name = ""
	f := drover.FamilyConfig{Name: churnFamily, Prefix: churnPrefix, Queue: qc, RetireAfter: drover.Duration(churnRetireAfter)}
	if err := createFamily(ctx, f); err != nil {
		return fmt.Errorf("create family %s: %w", churnFamily, err)
	}
	return nil
}

func newChurner(gen *loadGen, store *queue.Store, zk *zkClient) *churner {
	c := &churner{gen: gen, store: store, zk: zk, keys: map[string]*churnKey{}}
	for i := range churnKeys {
		q := fmt.Sprintf("%sk%02d", churnPrefix, i)
		c.cycling = append(c.cycling, q)
		c.keys[q] = &churnKey{}
	}
	return c
}

// run cycles the keys while feed is live: a key not fed in its cycle gets
// one to three messages; a key whose messages all ran waits idle; an idle
// key found retired is fed again.
func (c *churner) run(feed context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-feed.Done():
			return
		case <-t.C:
		}
		if c.gen.ran == nil {
			continue
		}
		var msgs []*drover.Message
		for _, q := range c.cycling {
			switch k := c.key(q); {
			case !k.sent:
				msgs = append(msgs, c.messages(q, 1+len(msgs)%3)...)
				c.mu.Lock()
				k.sent = true
				c.mu.Unlock()
			case !k.idle:
				if c.outstanding(q) <= 0 { // below 0: copies of a batch sent twice ran too
					c.mu.Lock()
					k.idle, k.idleSince = true, time.Now()
					c.mu.Unlock()
				}
			default:
				retired := c.retired(feed, q)
				c.mu.Lock()
				switch {
				case retired:
					c.retirements++
					c.returns++
					k.sent, k.idle = false, false
				case time.Since(k.idleSince) > churnStuckAfter:
					c.stuck++
					k.sent, k.idle = false, false
				}
				c.mu.Unlock()
			}
		}
		if len(msgs) > 0 {
			c.gen.sendVia(feed, c.store, msgs)
		}
	}
}

func (c *churner) key(q string) *churnKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keys[q]
}

// messages returns n messages for q, with ids the producer generates: a
// batch over the churning keys, once this process has registered them,
// goes through the producer's lone and many-message scripts (queue,
// enqueueSpread), which no other load of the harness takes (its other
// messages carry caller ids). The checks follow the ids the producer
// answered. A batch whose outcome was unknown and that is sent again may
// leave a first copy under ids nobody was told: it runs as a message of
// its own, and outstanding counts it (at least once, not a loss).
func (c *churner) messages(q string, n int) []*drover.Message {
	msgs := make([]*drover.Message, n)
	for i := range msgs {
		msgs[i] = &drover.Message{Queue: q, Task: "work", Args: json.RawMessage(`{"sleep_ms":10}`)}
	}
	return msgs
}

// outstanding is how many of q's confirmed messages have not run.
func (c *churner) outstanding(q string) int {
	c.gen.mu.Lock()
	n := c.gen.perQueue[q]
	c.gen.mu.Unlock()
	return n - c.gen.ran(q)
}

// retired reports whether q has no registry entry (after it ran, so it was
// registered: its absence is a retirement).
func (c *churner) retired(ctx context.Context, q string) bool {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	s, err := c.zk.session(cctx)
	if err != nil {
		c.fail()
		return false
	}
	_, err = s.Queues().Get(cctx, q)
	if errors.Is(err, drover.ErrQueueNotFound) {
		return true
	}
	if err != nil {
		c.fail()
	}
	return false
}

func (c *churner) fail() {
	c.mu.Lock()
	c.errs++
	c.mu.Unlock()
}

// burst registers churnBurst new keys at once (one message each) and
// returns when they have run, or at until.
func (c *churner) burst(ctx context.Context, until time.Time) (string, error) {
	c.mu.Lock()
	c.bursts++
	n := c.bursts
	c.mu.Unlock()
	var msgs []*drover.Message
	for i := range churnBurst {
		q := fmt.Sprintf("%sb%03d-%03d", churnPrefix, n, i)
		c.mu.Lock()
		c.keys[q] = &churnKey{sent: true}
		c.mu.Unlock()
		msgs = append(msgs, c.messages(q, 1)...)
	}
	c.gen.sendVia(ctx, c.store, msgs)
	for time.Now().Before(until) {
		left := 0
		for _, m := range msgs {
			left += max(0, c.outstanding(m.Queue))
		}
		if left == 0 {
			return fmt.Sprintf("%d new keys (burst %d) ran; %d retirements seen so far", churnBurst, n, c.seen()), nil
		}
		if !clock.Sleep(ctx, 200*time.Millisecond) {
			return "", ctx.Err()
		}
	}
	return fmt.Sprintf("%d new keys (burst %d) not all run within the bound", churnBurst, n), nil
}

func (c *churner) seen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.retirements
}

// names lists every key fed, sorted.
func (c *churner) names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.keys))
	for q := range c.keys {
		out = append(out, q)
	}
	slices.Sort(out)
	return out
}

// settle waits, after the drain, until every key fed is retired, at most
// until deadline, and splits them into the retired and the registered.
func (c *churner) settle(ctx context.Context, deadline time.Time) (retired map[string]bool, registered []string) {
	retired = map[string]bool{}
	for {
		registered = registered[:0]
		for _, q := range c.names() {
			if retired[q] {
				continue
			}
			if c.retired(ctx, q) {
				retired[q] = true
			} else {
				registered = append(registered, q)
			}
		}
		if len(registered) == 0 || time.Now().After(deadline) || !clock.Sleep(ctx, 500*time.Millisecond) {
			return retired, registered
		}
	}
}

// stats is the churn's summary for the report.
func (c *churner) stats(retiredAtEnd int) check.ChurnSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	return check.ChurnSummary{Keys: len(c.keys), Retirements: c.retirements, Returns: c.returns, Bursts: c.bursts, RetiredAtEnd: retiredAtEnd, Stuck: c.stuck, LookupErrors: c.errs}
}
