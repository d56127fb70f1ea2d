package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/worker/executor"
)

// memLog is an in-memory Store for the worker's unit tests: every ability
// of the port, batched ones included, so that the tests run the paths
// production runs.
type memLog struct {
	mu       sync.Mutex
	next     drover.Position
	log      map[string][]drover.LogEntry // queue → entries in position order
	delayed  map[string][]delayedMsg
	dead     map[string][]drover.DeadLetter
	trims    map[string][]drover.Position
	retries  int
	promotes int                        // PromoteDueNext calls
	checks   int                        // CheckQueues and QueueHeads calls (backstop passes)
	full     int                        // CheckQueues calls
	heads    map[string]drover.Position // last position handed out per queue (a :seq key)
	// headsGate, when set, holds every QueueHeads call until it is closed;
	// headsHeld counts the calls that reached it.
	headsGate chan struct{}
	headsHeld int
	reads     int // ReadAfter calls
	outcomes  map[string][]drover.Outcome
	// recordTrims counts TrimRecording calls: each is one trim carrying
	// records, never a write of its own.
	recordTrims int
	trimCalls   [][]drover.TrimRequest // TrimMany calls
	readRounds  int                    // ReadMany calls
	routed      map[string]string      // queue → member its wake-ups go to
	starts      map[string]int         // "queue\x00id" → starts recorded (their fields in :msg)
	startRounds int                    // RecordStarts calls
	parkedHeads []string               // ParkHead calls: "queue/id"
	// failTrims: how many of a queue's next TrimMany trims (not
	// records-only requests) fail (Redis cut), trimming nothing.
	failTrims map[string]int
	// notes: the record bucket note each queue's last records were
	// answered with (drover.RecordBucket); noteErrs: requests with records
	// that did not carry the note answered before.
	notes    map[string]string
	noteErrs []string
}

var _ Store = (*memLog)(nil)

func newMemLog() *memLog {
	return &memLog{next: 1, log: map[string][]drover.LogEntry{}, delayed: map[string][]delayedMsg{},
		dead: map[string][]drover.DeadLetter{}, trims: map[string][]drover.Position{}}
}

func (l *memLog) add(queue string, m *drover.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m.Queue = queue
	raw, _ := m.MarshalJSON()
	l.log[queue] = append(l.log[queue], drover.LogEntry{Queue: queue, Position: l.next, ID: m.ID, Raw: raw})
	l.setHead(queue, l.next)
	l.next++
}

// lastPosition is the last position handed out in queue.
func (l *memLog) lastPosition(queue string) drover.Position {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.heads[queue]
}

// setHead records the last position handed out in queue; l.mu is held.
func (l *memLog) setHead(queue string, p drover.Position) {
	if l.heads == nil {
		l.heads = map[string]drover.Position{}
	}
	l.heads[queue] = max(l.heads[queue], p)
}

// drop removes queue's log entries but not its head, as when a message is
// killed before its owner reads it.
func (l *memLog) drop(queue string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.log, queue)
}

// fullChecks returns how many CheckQueues calls were made.
func (l *memLog) fullChecks() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.full
}

func (l *memLog) addPoison(queue, id string, raw []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log[queue] = append(l.log[queue], drover.LogEntry{Queue: queue, Position: l.next, ID: id, Raw: raw})
	l.setHead(queue, l.next)
	l.next++
}

// delayedMsg is a message waiting for its due time.
type delayedMsg struct {
	m   *drover.Message
	due time.Time
}

// addDelayed stores m as delayed until due, as an enqueue with a due time.
func (l *memLog) addDelayed(queue string, m *drover.Message, due time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m.Queue = queue
	l.delayed[queue] = append(l.delayed[queue], delayedMsg{m: m, due: due})
}

func (l *memLog) ReadAfter(_ context.Context, queue string, after drover.Position, n int) ([]drover.LogEntry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.readLocked(queue, after, n), nil
}

// ReadMany reads each request as ReadAfter does, in one call.
func (l *memLog) ReadMany(_ context.Context, reqs []drover.ReadRequest) []drover.ReadResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.readRounds++
	out := make([]drover.ReadResult, len(reqs))
	for i, r := range reqs {
		out[i].Entries = l.readLocked(r.Queue, r.After, r.N)
		if !r.Starts { // as the read-many script: asked for, or 0
			for j := range out[i].Entries {
				out[i].Entries[j].Starts = 0
			}
		}
	}
	return out
}

// readLocked reads one queue; l.mu is held.
func (l *memLog) readLocked(queue string, after drover.Position, n int) []drover.LogEntry {
	l.reads++
	var out []drover.LogEntry
	for _, e := range l.log[queue] {
		if e.Position > after && len(out) < n {
			e.Starts = l.starts[queue+"\x00"+e.ID] // as the read scripts return them
			out = append(out, e)
		}
	}
	return out
}

// PromoteMany promotes each request as PromoteDueNext does, in one call.
func (l *memLog) PromoteMany(ctx context.Context, reqs []drover.PromoteRequest) []drover.PromoteResult {
	out := make([]drover.PromoteResult, len(reqs))
	for i, r := range reqs {
		out[i].Moved, out[i].Next, out[i].Err = l.PromoteDueNext(ctx, r.Queue, r.Now, r.Limit)
	}
	return out
}

func (l *memLog) PromoteDueNext(_ context.Context, queue string, now time.Time, limit int) (int, time.Time, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.promotes++
	n := 0
	var keep []delayedMsg
	var next time.Time
	for _, d := range l.delayed[queue] {
		if d.due.After(now) {
			keep = append(keep, d)
			if next.IsZero() || d.due.Before(next) {
				next = d.due
			}
			continue
		}
		raw, _ := d.m.MarshalJSON()
		l.log[queue] = append(l.log[queue], drover.LogEntry{Queue: queue, Position: l.next, ID: d.m.ID, Raw: raw})
		l.setHead(queue, l.next)
		l.next++
		n++
	}
	l.delayed[queue] = keep
	return n, next, nil
}

// CheckQueues is the amortised check: one call for all the queues given.
func (l *memLog) CheckQueues(_ context.Context, queues []string, offsets []drover.Position) ([]drover.QueueCheck, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checks++
	l.full++
	var out []drover.QueueCheck
	for i, q := range queues {
		c := drover.QueueCheck{Queue: q}
		for _, e := range l.log[q] {
			if e.Position > offsets[i] {
				c.Ready = true
			} else if !slices.ContainsFunc(l.trims[q], func(p drover.Position) bool { return p >= e.Position }) {
				c.Stale = true // at or before the offset, and no trim covered it
			}
		}
		for _, d := range l.delayed[q] {
			if c.NextDue.IsZero() || d.due.Before(c.NextDue) {
				c.NextDue = d.due
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// QueueHeads is the periodic pass's read: each queue's last position.
func (l *memLog) QueueHeads(_ context.Context, queues []string, heads []drover.Position) ([]drover.Position, error) {
	l.mu.Lock()
	gate := l.headsGate
	l.headsHeld++
	l.mu.Unlock()
	if gate != nil {
		<-gate
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checks++
	for _, q := range queues {
		heads = append(heads, l.heads[q])
	}
	return heads, nil
}

// counts returns how many promotions, checks and reads were made.
func (l *memLog) counts() (promotes, checks, reads int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.promotes, l.checks, l.reads
}

// promoteCount returns how many PromoteDueNext calls were made.
func (l *memLog) promoteCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.promotes
}

func (l *memLog) Trim(_ context.Context, queue string, offset drover.Position, _ time.Duration) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failTrims[queue] > 0 {
		l.failTrims[queue]--
		return 0, errors.New("fake: redis cut")
	}
	l.trims[queue] = append(l.trims[queue], offset)
	return 0, nil
}

func (l *memLog) TrimRecording(ctx context.Context, queue string, offset drover.Position, retention time.Duration, os []drover.Outcome, _ drover.Outcomes) (int, error) {
	l.mu.Lock()
	if l.outcomes == nil {
		l.outcomes = map[string][]drover.Outcome{}
	}
	l.outcomes[queue] = append(l.outcomes[queue], os...)
	l.recordTrims++
	l.mu.Unlock()
	return l.Trim(ctx, queue, offset, retention)
}

// TrimMany trims each request as TrimRecording does (a records-only
// request keeps its records and trims nothing), recording the call.
func (l *memLog) TrimMany(ctx context.Context, reqs []drover.TrimRequest) []error {
	errs := make([]error, len(reqs))
	for i, r := range reqs {
		l.mu.Lock()
		fail := l.failTrims[r.Queue] > 0 && !r.RecordsOnly
		if fail {
			l.failTrims[r.Queue]--
		}
		l.mu.Unlock()
		if fail {
			errs[i] = errors.New("fake: redis cut")
			continue
		}
		l.answerNote(r)
		if r.RecordsOnly {
			l.mu.Lock()
			if l.outcomes == nil {
				l.outcomes = map[string][]drover.Outcome{}
			}
			l.outcomes[r.Queue] = append(l.outcomes[r.Queue], r.Outcomes...)
			l.mu.Unlock()
			continue
		}
		_, errs[i] = l.TrimRecording(ctx, r.Queue, r.Offset, r.Retention, r.Outcomes, r.Policy)
	}
	l.mu.Lock()
	l.trimCalls = append(l.trimCalls, slices.Clone(reqs))
	l.mu.Unlock()
	return errs
}

// batches returns the requests of every TrimMany call so far.
func (l *memLog) batches() [][]drover.TrimRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.trimCalls)
}

// trimList returns the offsets queue was trimmed at, in order.
func (l *memLog) trimList(queue string) []drover.Position {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.trims[queue])
}

// Backlog reports an empty backlog: the tests that look at backlogs
// override BacklogMany.
func (l *memLog) Backlog(context.Context, string, drover.Position) (drover.Backlog, error) {
	return drover.Backlog{}, nil
}

// BacklogMany reports an empty backlog per queue.
func (l *memLog) BacklogMany(_ context.Context, queues []string, _ []drover.Position) ([]drover.Backlog, []error) {
	return make([]drover.Backlog, len(queues)), make([]error, len(queues))
}

// RouteWakeups records where the queues' wake-ups go.
func (l *memLog) RouteWakeups(_ context.Context, member string, queues ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.routed == nil {
		l.routed = map[string]string{}
	}
	for _, q := range queues {
		l.routed[q] = member
	}
	return nil
}

func (l *memLog) Retry(_ context.Context, m *drover.Message, due time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cp := *m
	l.delayed[m.Queue] = append(l.delayed[m.Queue], delayedMsg{m: &cp, due: due})
	l.retries++
	return nil
}

func (l *memLog) DeadLetter(_ context.Context, queue string, d drover.DeadLetter) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dead[queue] = append(l.dead[queue], d)
	id := d.ID
	if id == "" && d.Message != nil {
		id = d.Message.ID
	}
	delete(l.starts, queue+"\x00"+id)
	return nil
}

// RecordStarts counts a start of each message, as the starts fields of :msg do.
func (l *memLog) RecordStarts(_ context.Context, queues, ids []string) ([]int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.starts == nil {
		l.starts = map[string]int{}
	}
	l.startRounds++
	out := make([]int, len(ids))
	for i, id := range ids {
		k := queues[i] + "\x00" + id
		l.starts[k]++
		out[i] = l.starts[k]
	}
	return out, nil
}

// ParkHead forgets the head's starts, as the park-head script does.
func (l *memLog) ParkHead(_ context.Context, queue, id string, _, _ []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.starts, queue+"\x00"+id)
	l.parkedHeads = append(l.parkedHeads, queue+"/"+id)
	return nil
}

func (l *memLog) deadCount(queue string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.dead[queue])
}

// memClaim is a Claim that can be fenced.
type memClaim struct {
	mu       sync.Mutex
	off      drover.Offset
	commits  []drover.Position
	released *drover.Offset
	fenced   bool
}

// Committer makes every memClaim commit in batches, as the coordinator's
// claims do (drover.BatchClaim): the worker's tests run the committer's
// CommitMany path that production runs.
func (c *memClaim) Committer() drover.ClaimCommitter { return memCommitter{} }

// memCommitter commits each request through its claim's own Commit (the
// claim of the request, so a test's claim type that overrides Commit is
// honoured).
type memCommitter struct{}

func (memCommitter) CommitMany(ctx context.Context, reqs []drover.CommitRequest) []error {
	errs := make([]error, len(reqs))
	for i, r := range reqs {
		errs[i] = r.Claim.Commit(ctx, r.Offset)
	}
	return errs
}

// Done and Err: a memClaim's end is not what the worker's tests observe.
func (c *memClaim) Done() <-chan struct{} { return nil }
func (c *memClaim) Err() error            { return nil }

func (c *memClaim) Offset() drover.Offset { c.mu.Lock(); defer c.mu.Unlock(); return c.off }

func (c *memClaim) Commit(_ context.Context, off drover.Offset) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fenced {
		return fmt.Errorf("commit: %w", drover.ErrFenced)
	}
	if off.Position < c.off.Position {
		return fmt.Errorf("offset went backwards: %d < %d", off.Position, c.off.Position)
	}
	c.off = off
	c.commits = append(c.commits, off.Position)
	return nil
}

func (c *memClaim) Release(_ context.Context, off drover.Offset) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fenced {
		return fmt.Errorf("release: %w", drover.ErrFenced)
	}
	c.off = off
	c.released = &off
	return nil
}

func (c *memClaim) committed() drover.Position { return c.Offset().Position }

// scriptedExecutor returns outcomes chosen per message id and attempt, and
// records every run.
type scriptedExecutor struct {
	mu      sync.Mutex
	runs    []string // "id#attempt"
	outcome func(m *drover.Message) executor.Outcome
	gate    chan struct{} // when set, each Execute waits for a token or ctx
	pid     int           // when set, reported through Task.OnStart
	running int
	maxRun  int
}

func (e *scriptedExecutor) Execute(ctx context.Context, t *executor.Task) executor.Result {
	e.mu.Lock()
	e.running++
	if e.running > e.maxRun {
		e.maxRun = e.running
	}
	e.runs = append(e.runs, fmt.Sprintf("%s#%d", t.Message.ID, t.Message.Attempt))
	e.mu.Unlock()
	defer func() { e.mu.Lock(); e.running--; e.mu.Unlock() }()
	if e.pid != 0 && t.OnStart != nil {
		t.OnStart(e.pid)
	}
	if e.gate != nil {
		select {
		case <-e.gate:
		case <-ctx.Done():
			return executor.Result{Outcome: executor.OutcomeAborted, ExitCode: -1, Reason: "aborted"}
		}
	}
	o := executor.OutcomeSuccess
	if e.outcome != nil {
		o = e.outcome(t.Message)
	}
	code := 0
	switch o {
	case executor.OutcomeRetry:
		code = 75
	case executor.OutcomeFailure:
		code = 1
	}
	return executor.Result{Outcome: o, ExitCode: code, Reason: string(o), Stderr: []byte("boom"), Stdout: []byte("result:" + t.Message.ID)}
}

func (e *scriptedExecutor) runList() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := append([]string(nil), e.runs...)
	return out
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// readGate holds a fake log's reads while set: a read that finds it set
// waits until the test releases it.
type readGate struct {
	gateMu sync.Mutex
	hold   chan struct{}
}

// gate returns the channel a read must wait for, or nil.
func (g *readGate) gate() chan struct{} {
	g.gateMu.Lock()
	defer g.gateMu.Unlock()
	return g.hold
}

// holdReads holds the reads that start from now on until release is
// called (once or more).
func (g *readGate) holdReads() (release func()) {
	h := make(chan struct{})
	g.gateMu.Lock()
	g.hold = h
	g.gateMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.gateMu.Lock()
			g.hold = nil
			g.gateMu.Unlock()
			close(h)
		})
	}
}

// batchCommitter is a drover.ClaimCommitter over batchClaims: it records
// every CommitMany call (the queues it carried) and commits each claim
// through its memClaim, unless the test set an error for the queue.
type batchCommitter struct {
	mu    sync.Mutex
	calls [][]string
	fail  map[string]error // queue → the error of its next commit
	clock *testkit.Clock   // when set, at is the clock's time at each call
	at    []time.Time
}

func (b *batchCommitter) CommitMany(ctx context.Context, reqs []drover.CommitRequest) []error {
	b.mu.Lock()
	var names []string
	for _, r := range reqs {
		names = append(names, r.Claim.(*batchClaim).queue)
	}
	sort.Strings(names)
	b.calls = append(b.calls, names)
	if b.clock != nil {
		b.at = append(b.at, b.clock.Now())
	}
	b.mu.Unlock()
	errs := make([]error, len(reqs))
	for i, r := range reqs {
		c := r.Claim.(*batchClaim)
		b.mu.Lock()
		err, failed := b.fail[c.queue]
		delete(b.fail, c.queue)
		b.mu.Unlock()
		if failed {
			errs[i] = err
			continue
		}
		errs[i] = c.Commit(ctx, r.Offset)
	}
	return errs
}

// callList returns the queues of every CommitMany call so far.
func (b *batchCommitter) callList() [][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([][]string(nil), b.calls...)
}

// batchClaim is a memClaim that commits through a batchCommitter.
type batchClaim struct {
	memClaim
	queue string
	b     *batchCommitter
}

func (c *batchClaim) Committer() drover.ClaimCommitter { return c.b }

var _ drover.BatchClaim = (*batchClaim)(nil)

// holdingExecutor is a scriptedExecutor that holds the messages whose id
// starts with "hold" until release is closed (or the task is aborted): a
// queue running one keeps the member from draining.
type holdingExecutor struct {
	*scriptedExecutor
	release chan struct{}
	held    atomic.Int32 // tasks held now
}

func newHoldingExecutor() *holdingExecutor {
	return &holdingExecutor{scriptedExecutor: &scriptedExecutor{}, release: make(chan struct{})}
}

func (e *holdingExecutor) Execute(ctx context.Context, t *executor.Task) executor.Result {
	if strings.HasPrefix(t.Message.ID, "hold") {
		e.held.Add(1)
		defer e.held.Add(-1)
		select {
		case <-e.release:
		case <-ctx.Done():
			return executor.Result{Outcome: executor.OutcomeAborted, ExitCode: -1, Reason: "aborted"}
		}
	}
	return e.scriptedExecutor.Execute(ctx, t)
}

// answerNote checks that a request with records carries the bucket note
// the last records of its queue were answered with, and answers a new one,
// as queue.Log.TrimMany does.
func (l *memLog) answerNote(r drover.TrimRequest) {
	if len(r.Outcomes) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.notes == nil {
		l.notes = map[string]string{}
	}
	switch {
	case r.Bucket == nil:
		l.noteErrs = append(l.noteErrs, r.Queue+": records without a note")
		return
	case r.Bucket.Name != l.notes[r.Queue]:
		l.noteErrs = append(l.noteErrs, fmt.Sprintf("%s: note %q, answered %q last", r.Queue, r.Bucket.Name, l.notes[r.Queue]))
	}
	name := fmt.Sprintf("%s-b%d", r.Queue, len(l.notes)+len(l.noteErrs)+int(r.Bucket.Held)+1)
	*r.Bucket = drover.RecordBucket{Name: name, Held: r.Bucket.Held + int64(len(r.Outcomes))}
	l.notes[r.Queue] = name
}
