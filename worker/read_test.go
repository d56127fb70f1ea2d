package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/metrics"
)

// batchLogReads is a memLog whose ReadMany records
// each batch; while held, a batch waits in ReadMany until released.
type batchLogReads struct {
	*memLog
	readGate

	mu      sync.Mutex
	batches [][]drover.ReadRequest
	entered chan struct{} // a held batch is inside ReadMany (buffered)
}

func newBatchLogReads(mem *memLog) *batchLogReads {
	return &batchLogReads{memLog: mem, entered: make(chan struct{}, 16)}
}

func (l *batchLogReads) ReadMany(ctx context.Context, reqs []drover.ReadRequest) []drover.ReadResult {
	l.mu.Lock()
	l.batches = append(l.batches, slices.Clone(reqs))
	h := l.gate()
	l.mu.Unlock()
	if h != nil {
		l.entered <- struct{}{}
		<-h
	}
	out := make([]drover.ReadResult, len(reqs))
	for i, r := range reqs {
		out[i].Entries, out[i].Err = l.memLog.ReadAfter(ctx, r.Queue, r.After, r.N)
	}
	return out
}

func (l *batchLogReads) batchList() [][]drover.ReadRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.batches)
}

func pendingReads(r *reader) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// Reads that arrive while a round trip is in flight go together in the
// next one, each at its own offset, and each caller gets its own entries.
func TestReadsArrivingDuringARoundTripGoTogether(t *testing.T) {
	mem := newMemLog()
	for _, q := range []string{"a", "b", "c", "d"} {
		for i := range 3 {
			mem.add(q, msg(fmt.Sprintf("%s%d", q, i)))
		}
	}
	log := newBatchLogReads(mem)
	r := newReader(log, metrics.Discard, nil)
	r.inFlight = 1 // one round trip at a time: the next gathers what waits
	release := log.holdReads()
	defer release()
	type got struct {
		ids []string
		err error
	}
	results := make(map[string]chan got)
	read := func(q string, after drover.Position, n int) {
		ch := make(chan got, 1)
		results[q] = ch
		go func() {
			es, err := r.read(context.Background(), q, after, n, false)
			var ids []string
			for _, e := range es {
				ids = append(ids, e.ID)
			}
			ch <- got{ids, err}
		}()
	}
	read("a", 0, 10)
	<-log.entered // a's round trip is in flight
	// b from the start, c after its first message, d after its last.
	cs, _ := mem.ReadAfter(context.Background(), "c", 0, 10)
	ds, _ := mem.ReadAfter(context.Background(), "d", 0, 10)
	read("b", 0, 2)
	read("c", cs[0].Position, 10)
	read("d", ds[2].Position, 10)
	waitFor(t, "three reads waiting for the next round trip", func() bool { return pendingReads(r) == 3 })
	release()
	want := map[string]string{"a": "[a0 a1 a2]", "b": "[b0 b1]", "c": "[c1 c2]", "d": "[]"}
	for q, ch := range results {
		g := <-ch
		if g.err != nil || fmt.Sprint(g.ids) != want[q] {
			t.Errorf("read of %s: want %s, have %v (err %v)", q, want[q], g.ids, g.err)
		}
	}
	bs := log.batchList()
	if len(bs) != 2 || len(bs[0]) != 1 || len(bs[1]) != 3 {
		t.Fatalf("want a round trip of a's read, then one of the three others, have %v", bs)
	}
	if rounds, reads := r.stats(); rounds != 2 || reads != 4 {
		t.Fatalf("want 2 round trips carrying 4 reads, have %d and %d", rounds, reads)
	}
}

// A read whose queue stops (is lost) while it waits for the next round trip
// is not sent, and its caller returns at once, without the in-flight round
// trip ending; the other reads of the batch are sent.
func TestReadOfAStoppedQueueIsNotSent(t *testing.T) {
	mem := newMemLog()
	mem.add("b", msg("b0"))
	mem.add("c", msg("c0"))
	log := newBatchLogReads(mem)
	r := newReader(log, metrics.Discard, nil)
	r.inFlight = 1 // one round trip at a time: the next gathers what waits
	release := log.holdReads()
	defer release()
	go func() { _, _ = r.read(context.Background(), "a", 0, 10, false) }()
	<-log.entered
	ctx, cancel := context.WithCancel(context.Background())
	bErr := make(chan error, 1)
	go func() {
		_, err := r.read(ctx, "b", 0, 10, false)
		bErr <- err
	}()
	cDone := make(chan []drover.LogEntry, 1)
	go func() {
		es, _ := r.read(context.Background(), "c", 0, 10, false)
		cDone <- es
	}()
	waitFor(t, "b and c waiting", func() bool { return pendingReads(r) == 2 })
	cancel()
	if err := <-bErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("b's read: want context.Canceled while a's round trip is still held, have %v", err)
	}
	release()
	if es := <-cDone; len(es) != 1 || es[0].ID != "c0" {
		t.Fatalf("c's read: want c0, have %+v", es)
	}
	bs := log.batchList()
	if len(bs) != 2 || len(bs[1]) != 1 || bs[1][0].Queue != "c" {
		t.Fatalf("want the second round trip to carry c alone, have %v", bs)
	}
}

// A queue lost while its loop's read is in a batch runs nothing of what the
// batch returns for it; a queue lost while its read waits for the next
// batch is not read at all. The other queues of the batches run.
func TestLostQueueRunsNothingFromABatchedRead(t *testing.T) {
	mem := newMemLog()
	log := newBatchLogReads(mem)
	ex := newGateExecutor()
	w := newTestWorker(t, mem, ex, func(c *Config) {
		c.Clock = testkit.NewClock(t0)
		c.Store = log
		c.CommitInterval, c.PromoteInterval, c.PollInterval = DefaultCommitInterval, DefaultPromoteInterval, DefaultPollInterval
	})
	w.reads.inFlight = 1 // b's and c's reads wait while a's is in flight
	for _, q := range []string{"a", "b", "c"} {
		if err := w.Start(queueConfig(q, nil), &memClaim{}); err != nil {
			t.Fatal(err)
		}
	}
	allParked(t, w)
	release := log.holdReads()
	defer release()
	mem.add("a", msg("a1"))
	w.Wake("a")
	<-log.entered // a's read is in flight
	for _, q := range []string{"b", "c"} {
		mem.add(q, msg(q+"1"))
		w.Wake(q)
	}
	waitFor(t, "b's and c's reads waiting for the next batch", func() bool { return pendingReads(w.reads) == 2 })
	w.Abort("b") // returns: its read was waiting, not sent
	aborted := make(chan struct{})
	go func() { w.Abort("a"); close(aborted) }() // waits for a's read to return
	waitFor(t, "a lost", func() bool { return w.loop("a") == nil || w.loop("a").lost.Load() })
	release()
	<-aborted
	close(ex.gate("c1"))
	waitFor(t, "c1 to run", func() bool { return ex.hasStarted("c1") })
	if ex.hasStarted("a1") || ex.hasStarted("b1") {
		t.Fatalf("a lost queue ran a message: a1 %v, b1 %v", ex.hasStarted("a1"), ex.hasStarted("b1"))
	}
	for _, b := range log.batchList() {
		for _, r := range b {
			if r.Queue == "b" {
				t.Fatalf("b's read was sent after b was lost: %v", log.batchList())
			}
		}
	}
}

// A queue that parks between messages (a message every few seconds) does
// not promote on each turn: the idle scheduler holds its due times, and its
// own PromoteInterval counts from the start of a turn.
func TestQueueParkingBetweenMessagesDoesNotPromoteEachTurn(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{}
	w, clock := newIdleWorker(t, log, ex)
	if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	allParked(t, w)
	waitFor(t, "the started queue checked", func() bool { return w.loop("q").dueKnown.Load() })
	promotes := log.promoteCount()
	for i := range 5 {
		clock.Advance(3 * DefaultPromoteInterval)
		log.add("q", msg(fmt.Sprintf("m%d", i)))
		w.Wake("q")
		waitFor(t, "the message to run", func() bool { return len(ex.runList()) == i+1 })
		allParked(t, w)
	}
	if p := log.promoteCount(); p != promotes {
		t.Fatalf("5 turns of a queue with nothing delayed: want no promotion, have %d", p-promotes)
	}
}

// gaugeRecorder keeps the last value and the number of sets of each gauge.
type gaugeRecorder struct {
	metrics.Recorder
	mu   sync.Mutex
	last map[string]float32
	sets map[string]int
}

func (g *gaugeRecorder) SetGauge(name string, v float32, labels ...metrics.Label) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.last[name], g.sets[name] = v, g.sets[name]+1
}

func (g *gaugeRecorder) gauge(name string) (float32, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last[name], g.sets[name]
}

// lagLog reports a backlog of lag at each backlog read.
type lagLog struct {
	*memLog
	lag atomic.Int64
}

func (l *lagLog) BacklogMany(_ context.Context, queues []string, _ []drover.Position) ([]drover.Backlog, []error) {
	out := make([]drover.Backlog, len(queues))
	for i := range out {
		out[i].Lag = l.lag.Load()
	}
	return out, make([]error, len(queues))
}

// A queue that parks caught up sets its lag gauges to 0 when they said
// otherwise, and sets nothing when they say 0 already: a busy queue parks
// once per message.
func TestParkingQueueSetsItsLagGaugeOnlyWhenItChanges(t *testing.T) {
	mem := newMemLog()
	log := &lagLog{memLog: mem}
	log.lag.Store(5)
	rec := &gaugeRecorder{Recorder: metrics.Discard, last: map[string]float32{}, sets: map[string]int{}}
	ex := &scriptedExecutor{gate: make(chan struct{})}
	clock := testkit.NewClock(t0)
	w := newTestWorker(t, mem, ex, func(c *Config) {
		c.Clock, c.Store, c.Metrics = clock, log, rec
		c.CommitInterval, c.PromoteInterval, c.PollInterval = DefaultCommitInterval, DefaultPromoteInterval, DefaultPollInterval
	})
	if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	allParked(t, w)
	// run runs one message; while it runs (held), measured says whether a
	// backlog read is due and waits for its answer (the backlogger measures
	// off the loop's goroutine).
	run := func(id string, advance time.Duration, measured bool) {
		t.Helper()
		clock.Advance(advance)
		n := len(ex.runList())
		mem.add("q", msg(id))
		w.Wake("q")
		waitFor(t, id+" to start", func() bool { return len(ex.runList()) == n+1 })
		if measured {
			waitFor(t, "the backlog read while "+id+" runs", func() bool { v, _ := rec.gauge(metrics.Lag); return v == 5 })
		}
		ex.gate <- struct{}{}
		l := w.loop("q")
		waitFor(t, id+" done and published", func() bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			return l.snap.Done == drover.Position(n+1)
		})
		allParked(t, w)
	}
	// m1 runs after a BacklogInterval: the backlog read while it runs
	// says 5, and it parks caught up, which sets the gauge to 0.
	run("m1", 2*DefaultBacklogInterval, true)
	v, sets := rec.gauge(metrics.Lag)
	if v != 0 || sets < 2 {
		t.Fatalf("after a backlog of 5, parked caught up: want lag 0 set after the 5, have %v after %d sets", v, sets)
	}
	log.lag.Store(0)
	run("m3", time.Second, false)
	run("m4", time.Second, false)
	if _, again := rec.gauge(metrics.Lag); again != sets {
		t.Fatalf("two more parks with the lag at 0 already: want no gauge set, have %d", again-sets)
	}
}

// The reader keeps two round trips in flight: a read that arrives while one
// is held starts the second at once instead of waiting for the first; reads
// that arrive while both are in flight go together in the next.
func TestReaderKeepsTwoRoundTripsInFlight(t *testing.T) {
	mem := newMemLog()
	for _, q := range []string{"a", "b", "c", "d"} {
		mem.add(q, msg(q+"0"))
	}
	log := newBatchLogReads(mem)
	r := newReader(log, metrics.Discard, nil)
	release := log.holdReads()
	defer release()
	got := make(chan string, 4)
	read := func(q string) {
		go func() {
			es, err := r.read(context.Background(), q, 0, 10, false)
			if err != nil || len(es) != 1 {
				got <- fmt.Sprintf("%s: %v %v", q, es, err)
				return
			}
			got <- es[0].ID
		}()
	}
	read("a")
	<-log.entered // a's round trip is in flight
	read("b")
	<-log.entered // b's too, while a's is held
	read("c")
	read("d")
	waitFor(t, "c and d waiting for a round trip to end", func() bool { return pendingReads(r) == 2 })
	release()
	have := map[string]bool{}
	for range 4 {
		have[<-got] = true
	}
	for _, id := range []string{"a0", "b0", "c0", "d0"} {
		if !have[id] {
			t.Fatalf("want every read answered with its message, have %v", have)
		}
	}
	bs := log.batchList()
	if len(bs) != 3 || len(bs[0]) != 1 || len(bs[1]) != 1 || len(bs[2]) != 2 {
		t.Fatalf("want round trips of a, of b, then of c and d together, have %v", bs)
	}
}
