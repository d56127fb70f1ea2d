package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/tools/chaos/check"
)

// queueNames returns the run's queues: q00, q01, …; the first `ordered` of
// them are ordered.
func queueNames(n int) []string {
	qs := make([]string, n)
	for i := range qs {
		qs[i] = fmt.Sprintf("q%02d", i)
	}
	return qs
}

// queueConfig routes every task of a queue to the task program. No
// resource limits: a task with limits goes through the worker's trampoline
// re-exec, and its parent would no longer be the worker.
func queueConfig(name string, ordered bool, taskArgv []string) drover.QueueConfig {
	return drover.QueueConfig{
		Name: name, Ordered: ordered,
		Timeout:     drover.Duration(30 * time.Second),
		MaxAttempts: 50,
		Backoff:     drover.Backoff{Base: drover.Duration(100 * time.Millisecond), Max: drover.Duration(time.Second)},
		Tasks:       map[string]drover.TaskRoute{"*": {Command: taskArgv}},
	}
}

// scheduleDefinition is entry i: every second into queue, catch-up "all"
// so that a failover gap fires every missed slot (the checker expects every
// slot).
func scheduleDefinition(i int, queue string) scheduler.Definition {
	return scheduler.Definition{
		Name: fmt.Sprintf("tick%03d", i), Queue: queue, Task: "tick",
		Args:     json.RawMessage(`{"sleep_ms":2}`),
		Schedule: scheduler.Spec{Type: scheduler.TypeInterval, Every: time.Second},
		Catchup:  scheduler.CatchupAll,
	}
}

// loadGen enqueues a steady stream of messages round-robin over the
// queues, with caller-chosen ids (m-0000001, …) so that a batch whose
// outcome is unknown (Redis restarting) can be sent again safely. Only
// confirmed messages count as enqueued.
type loadGen struct {
	store    *queue.Store
	queues   []string
	rate     int
	sleepMax time.Duration
	// long are queues fed one message at a time, each sleeping a random
	// time in longSleep: tasks longer than the session timeout.
	long      []string
	longSleep [2]time.Duration
	rng       *rand.Rand
	out       *os.File // enqueued.log: "queue id position" per confirmed message
	// ran and maxLag hold the load back: no batch is sent while some
	// queue has more than maxLag confirmed messages that have not run, so
	// that a slow machine is tested for correctness, not drowned (the
	// report shows the rate achieved).
	ran    func(queue string) int
	maxLag int
	// generateIDs: every other queue's messages go without an id (split).
	generateIDs bool
	// foreign routes a queue's messages to a producer in another language
	// (foreign.go); the others go through store.
	foreign map[string]*foreignProducer

	mu        sync.Mutex
	enqueued  []check.Enqueued
	ackedAt   []time.Time    // when each of enqueued was acknowledged (nondecreasing)
	perQueue  map[string]int // confirmed messages per queue
	byClient  map[string]int // confirmed messages per producer (producerGo, …)
	retries   int
	throttled int // ticks skipped because of maxLag
	seq       int
}

// tick is how often the generator sends a batch.
const loadTick = 50 * time.Millisecond

// run enqueues until ctx ends. A batch that fails is sent again (same ids)
// until Redis confirms it or hard ends; run returns after the last batch.
// Missed ticks are not made up: the rate is a ceiling.
func (l *loadGen) run(ctx, hard context.Context) {
	t := time.NewTicker(loadTick)
	defer t.Stop()
	var acc float64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if long := l.longBatch(); len(long) > 0 {
			l.send(hard, long)
		}
		if l.behind() {
			l.mu.Lock()
			l.throttled++
			l.mu.Unlock()
			acc = 0
			continue
		}
		acc += float64(l.rate) * loadTick.Seconds()
		n := int(acc)
		acc -= float64(n)
		if n > 0 {
			named, generated := l.split(l.batch(n))
			if len(named) > 0 {
				l.send(hard, named)
			}
			if len(generated) > 0 {
				l.send(hard, generated)
			}
		}
	}
}

// split leaves the messages of every other queue (odd index) without an
// id, when generateIDs is set (no Sentinel kind: its check looks for the
// caller ids in :seen): the producer generates theirs, and a batch of only
// those goes through its lone and many-message scripts (queue,
// enqueueSpread), whose wake-up carries a lone message to its owner, who
// then runs it without a read (worker/pushed.go). The other half keeps
// caller ids (the dedupe path).
// Sent again after an unknown outcome, a generated-id batch may leave a
// first copy under ids nobody was told: it runs as a message of its own
// (at least once, not a loss), as the churning keys' do.
func (l *loadGen) split(msgs []*drover.Message) (named, generated []*drover.Message) {
	if !l.generateIDs {
		return msgs, nil
	}
	for _, m := range msgs {
		if i := slices.Index(l.queues, m.Queue); i%2 == 1 {
			m.ID = ""
			generated = append(generated, m)
			continue
		}
		named = append(named, m)
	}
	return named, generated
}

// behind reports whether some queue lags more than maxLag messages.
func (l *loadGen) behind() bool {
	if l.ran == nil || l.maxLag <= 0 {
		return false
	}
	l.mu.Lock()
	per := make(map[string]int, len(l.perQueue))
	for q, n := range l.perQueue {
		per[q] = n
	}
	l.mu.Unlock()
	for q, n := range per {
		if n-l.ran(q) > l.maxLag {
			return true
		}
	}
	return false
}

func (l *loadGen) batch(n int) []*drover.Message {
	msgs := make([]*drover.Message, n)
	for i := range msgs {
		l.seq++
		sleep := 0
		if l.sleepMax > 0 {
			sleep = l.rng.IntN(int(l.sleepMax/time.Millisecond) + 1)
		}
		msgs[i] = &drover.Message{
			ID: fmt.Sprintf("m-%07d", l.seq), Queue: l.queues[l.seq%len(l.queues)], Task: "work",
			Args: json.RawMessage(fmt.Sprintf(`{"sleep_ms":%d}`, sleep)),
		}
	}
	return msgs
}

// longBatch returns a long task for every long queue with nothing pending.
func (l *loadGen) longBatch() []*drover.Message {
	if l.ran == nil {
		return nil
	}
	var msgs []*drover.Message
	for _, q := range l.long {
		l.mu.Lock()
		n := l.perQueue[q]
		l.mu.Unlock()
		if n-l.ran(q) > 0 {
			continue
		}
		l.seq++
		lo, hi := l.longSleep[0], l.longSleep[1]
		sleep := lo + time.Duration(l.rng.Int64N(int64(hi-lo)+1))
		msgs = append(msgs, &drover.Message{
			ID: fmt.Sprintf("m-%07d", l.seq), Queue: q, Task: "work",
			Args: json.RawMessage(fmt.Sprintf(`{"sleep_ms":%d}`, sleep.Milliseconds())),
		})
	}
	return msgs
}

// send enqueues msgs, each through the producer of its queue: the Go
// producer's, or a foreign one's (a batch each, in the order given within
// a queue).
func (l *loadGen) send(hard context.Context, msgs []*drover.Message) {
	if len(l.foreign) == 0 {
		l.sendVia(hard, l.store, msgs)
		return
	}
	var own []*drover.Message
	var order []*foreignProducer
	byProducer := map[*foreignProducer][]*drover.Message{}
	for _, m := range msgs {
		p := l.foreign[m.Queue]
		if p == nil {
			own = append(own, m)
			continue
		}
		if byProducer[p] == nil {
			order = append(order, p)
		}
		byProducer[p] = append(byProducer[p], m)
	}
	// The producers send at once, as separate applications would: one
	// after another, each batch's durable wait came on top of the last
	// and the load fell by a third.
	var wg sync.WaitGroup
	if len(own) > 0 {
		wg.Go(func() { l.sendVia(hard, l.store, own) })
	}
	for _, p := range order {
		wg.Go(func() { l.sendForeign(hard, p, byProducer[p]) })
	}
	wg.Wait()
}

// sendForeign is sendVia through a foreign producer.
func (l *loadGen) sendForeign(hard context.Context, p *foreignProducer, msgs []*drover.Message) {
	l.sendUntilConfirmed(hard, p.name, msgs, func() ([]queue.EnqueueResult, error) { return p.enqueue(msgs) })
}

// sendVia is send through store's producer (its own dedupe window).
func (l *loadGen) sendVia(hard context.Context, store *queue.Store, msgs []*drover.Message) {
	l.sendUntilConfirmed(hard, producerGo, msgs, func() ([]queue.EnqueueResult, error) {
		ctx, cancel := context.WithTimeout(hard, 5*time.Second)
		defer cancel()
		return store.Producer().EnqueueBatch(ctx, msgs)
	})
}

// sendUntilConfirmed calls send until it confirms msgs (then they count
// as producer's) or hard ends: a batch whose outcome is unknown is sent
// again, the same messages, 200 ms later.
func (l *loadGen) sendUntilConfirmed(hard context.Context, producer string, msgs []*drover.Message, send func() ([]queue.EnqueueResult, error)) {
	for hard.Err() == nil {
		res, err := send()
		if err == nil {
			l.confirmAs(producer, msgs, res)
			return
		}
		l.mu.Lock()
		l.retries++
		l.mu.Unlock()
		select {
		case <-hard.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// confirmAs counts msgs as confirmed by producer, with their results.
func (l *loadGen) confirmAs(producer string, msgs []*drover.Message, res []queue.EnqueueResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byClient == nil {
		l.byClient = map[string]int{}
	}
	l.byClient[producer] += len(res)
	var b []byte
	now := time.Now()
	for i, r := range res {
		e := check.Enqueued{Queue: msgs[i].Queue, ID: r.ID, Position: int64(r.Position)}
		l.enqueued = append(l.enqueued, e)
		l.ackedAt = append(l.ackedAt, now)
		if l.perQueue == nil {
			l.perQueue = map[string]int{}
		}
		l.perQueue[e.Queue]++
		b = fmt.Appendf(b, "%s %s %d\n", e.Queue, e.ID, e.Position)
	}
	l.out.Write(b)
}

// ackedSince returns the messages acknowledged at or after t.
func (l *loadGen) ackedSince(t time.Time) []check.Enqueued {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, _ := slices.BinarySearchFunc(l.ackedAt, t, func(a, t time.Time) int { return a.Compare(t) })
	return append([]check.Enqueued(nil), l.enqueued[i:]...)
}

// confirmedBy returns the confirmed messages so far per producer.
func (l *loadGen) confirmedBy() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.byClient)
}

// confirmed returns the confirmed messages so far, how many batch sends
// failed and were retried, and how many ticks were skipped by maxLag.
func (l *loadGen) confirmed() ([]check.Enqueued, int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]check.Enqueued(nil), l.enqueued...), l.retries, l.throttled
}
