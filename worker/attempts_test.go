package worker

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/worker/executor"
)

// TestMain stops the Redis servers testenv starts for the tests that run
// on real Redis (attempts_test.go).
func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// redisStore is a queue store on the tests' Redis under a prefix of the
// test's own, with a client to look at its keys.
type redisStore struct {
	store  *queue.Store
	rdb    testenv.RedisProbe
	prefix string
}

func newRedisStore(t testing.TB, addr string) redisStore {
	t.Helper()
	rdb := testenv.NewRedisProbe(t, addr)
	prefix := testenv.Prefix(t)
	s, err := queue.New(queue.Config{Client: rdb.Client(), Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return redisStore{store: s, rdb: rdb, prefix: prefix}
}

// key is queue q's key of the given suffix.
func (r redisStore) key(q, suffix string) string { return r.prefix + ":{" + q + "}:" + suffix }

// starts returns the starts recorded of message id of q, and whether any are.
func (r redisStore) starts(t *testing.T, q, id string) (int, bool) {
	t.Helper()
	n, ok, err := r.rdb.HGetInt(context.Background(), r.key(q, "msg"), id+"\x00a") // beside the envelope (docs/redis-schema.md, "Attempts")
	if err != nil {
		t.Fatal(err)
	}
	return n, ok
}

func (r redisStore) enqueue(t testing.TB, q string, args string) string {
	t.Helper()
	res, err := r.store.Producer().Enqueue(context.Background(), &drover.Message{Queue: q, Task: "t", Args: []byte(args)})
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

// redisWorker is a worker on the store's Log, with the given executor.
func redisWorker(t testing.TB, member string, r redisStore, ex Executor, mod func(*Config)) *Worker {
	t.Helper()
	cfg := Config{
		Member: member, Capacity: 4, BatchSize: 7, Store: r.store.Log(), Executor: ex,
		CommitInterval: time.Millisecond, PromoteInterval: 5 * time.Millisecond, PollInterval: 10 * time.Millisecond,
		DrainTimeout: 5 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.AbortAll)
	return w
}

// poisonExecutor fails every attempt of its messages at once, except that
// from the attempt numbered holdFrom on (when holdFrom >= 0) an attempt
// runs until it is aborted: a task that hangs, cut short by a stop or a
// crash of its worker.
type poisonExecutor struct {
	holdFrom int

	mu   sync.Mutex
	runs []string // "id#attempt", in order
}

func (e *poisonExecutor) Execute(ctx context.Context, t *executor.Task) executor.Result {
	e.mu.Lock()
	e.runs = append(e.runs, fmt.Sprintf("%s#%d", t.Message.ID, t.Message.Attempt))
	e.mu.Unlock()
	if e.holdFrom >= 0 && t.Message.Attempt >= e.holdFrom {
		<-ctx.Done()
		return executor.Result{Outcome: executor.OutcomeAborted, ExitCode: -1, Reason: "aborted"}
	}
	return executor.Result{Outcome: executor.OutcomeFailure, ExitCode: 1, Reason: "exit status 1", Stderr: []byte("poison")}
}

func (e *poisonExecutor) runList() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.runs)
}

// A poison message with max_attempts 3 is started exactly 3 times,
// whichever workers ran it: its first owner runs attempts 0 (failed) and 1
// (or 0, 1 and 2), which a graceful stop that outlives the drain timeout
// (a move) or a kill -9 (the loop dropped, nothing released or committed)
// cuts short; the next owner, on the same Redis, runs what is left — or,
// when the attempt cut short was the last, nothing — and parks the ordered
// queue at the message (on_failure park) or dead-letters it, with the true
// attempt in the pause flag, the envelope and the dead letter. Before
// attempts lived with the message, the next owner started the count again
// (a poison head logged attempts 0, 0, 1, 0, 0, 1, 2).
func TestPoisonMessageUsesExactlyMaxAttemptsAcrossMovesAndCrashes(t *testing.T) {
	srv := testenv.Redis(t)
	for _, tc := range []struct {
		ordered bool
		crash   bool // a kill -9 of the first owner; else a graceful stop (a move)
		first   int  // attempts the first owner starts: first-1 fail, the last is cut short
	}{
		{ordered: true, crash: false, first: 2},
		{ordered: true, crash: true, first: 2},
		{ordered: true, crash: true, first: 3},
		{ordered: false, crash: false, first: 2},
		{ordered: false, crash: true, first: 2},
		{ordered: false, crash: true, first: 3},
	} {
		name := fmt.Sprintf("ordered=%v/crash=%v/first=%d", tc.ordered, tc.crash, tc.first)
		t.Run(name, func(t *testing.T) {
			r := newRedisStore(t, srv.Addr)
			ctx := context.Background()
			qc := queueConfig("q", func(qc *drover.QueueConfig) {
				qc.MaxAttempts = 3
				if tc.ordered {
					qc.Ordered, qc.Concurrency, qc.OnFailure = true, 0, drover.OnFailurePark
				}
			})
			id := r.enqueue(t, "q", `"bad"`)

			// The first owner: its last attempt hangs until the owner goes.
			exA := &poisonExecutor{holdFrom: tc.first - 1}
			pz := &memPauser{}
			a := redisWorker(t, "a", r, exA, func(c *Config) { c.Pauser = pz; c.DrainTimeout = 10 * time.Millisecond })
			claimA := &memClaim{}
			if err := a.Start(qc, claimA); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the first owner's attempts", func() bool { return len(exA.runList()) == tc.first })
			if n, _ := r.starts(t, "q", id); n != tc.first {
				t.Fatalf("starts recorded while attempt %d runs: want %d, have %d", tc.first-1, tc.first, n)
			}
			if tc.crash {
				a.Abort("q") // as a kill -9: no release, no commit, no write
				waitFor(t, "the first owner's loop to end", func() bool { return loopEnded(a, "q") })
			} else if err := a.Stop(ctx, "q", drover.StopLeave); err != nil {
				t.Fatal(err)
			}

			// The next owner, from the offset the first left in ZooKeeper.
			exB := &poisonExecutor{holdFrom: -1}
			b := redisWorker(t, "b", r, exB, func(c *Config) { c.Pauser = pz })
			if err := b.Start(qc, &memClaim{off: claimA.Offset()}); err != nil {
				t.Fatal(err)
			}
			dead := func() []drover.DeadLetter {
				dls, err := r.store.Dead().DeadLetters(ctx, "q", 0, 10)
				if err != nil {
					t.Fatal(err)
				}
				return dls
			}
			waitFor(t, "the message to be parked or dead-lettered", func() bool {
				if tc.ordered {
					return len(pz.list()) == 1
				}
				return len(dead()) == 1
			})
			allParked(t, b)

			var want []string
			for i := range 3 {
				want = append(want, fmt.Sprintf("%s#%d", id, i))
			}
			if have := append(exA.runList(), exB.runList()...); !slices.Equal(have, want) {
				t.Fatalf("starts: want exactly %v, have %v (first owner %v, next %v)", want, have, exA.runList(), exB.runList())
			}
			reason := "exit status 1"
			if tc.first == 3 {
				reason = "started 3 times, the last without an outcome; max_attempts 3"
			}
			if tc.ordered {
				p := pz.list()[0]
				if p.Head == nil || p.Head.ID != id || p.Head.Attempts != 3 || !strings.Contains(p.Head.Error, reason) {
					t.Fatalf("parked head: want %s after 3 attempts, failed with %q; have %+v", id, reason, p.Head)
				}
				st, err := r.store.Jobs().JobStatus(ctx, "q", id, 0)
				if err != nil {
					t.Fatal(err)
				}
				if st.State != drover.JobPending || st.Attempt != 2 || !strings.Contains(st.Error, reason) {
					t.Fatalf("job status of the parked head: want pending at attempt 2 with %q, have %s at %d with %q", reason, st.State, st.Attempt, st.Error)
				}
				if n, ok := r.starts(t, "q", id); ok {
					t.Fatalf("starts of the parked head: want none (a resume runs it with fresh attempts), have %d", n)
				}
				return
			}
			dl := dead()[0]
			if dl.Message == nil || dl.Message.Attempt != 2 || !strings.Contains(dl.Failure.Reason, reason) {
				t.Fatalf("dead letter: want attempt 2, failed with %q; have %+v, %q", reason, dl.Message, dl.Failure.Reason)
			}
			if n, ok := r.starts(t, "q", id); ok {
				t.Fatalf("starts of a dead letter: want none (removed with the message), have %d", n)
			}
		})
	}
}

// A parked head resumed runs again with fresh attempts (its starts were
// forgotten when it parked), on real Redis; then the rest runs, and the
// trim that follows the commit removes every message's starts.
func TestParkedHeadResumedRunsWithFreshAttemptsAndTrimForgetsStarts(t *testing.T) {
	r := newRedisStore(t, testenv.Redis(t).Addr)
	ids := []string{r.enqueue(t, "q", `"bad"`), r.enqueue(t, "q", `"ok"`)}
	f := &failing{bad: map[string]bool{ids[0]: true}}
	ex := &scriptedExecutor{outcome: f.outcome}
	pz := &memPauser{}
	w := redisWorker(t, "a", r, ex, func(c *Config) { c.Pauser = pz })
	claim := &memClaim{}
	qc := queueConfig("q", func(qc *drover.QueueConfig) {
		qc.Ordered, qc.Concurrency, qc.MaxAttempts, qc.OnFailure = true, 0, 2, drover.OnFailurePark
	})
	if err := w.Start(qc, claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the queue to park", func() bool { return len(pz.list()) == 1 })
	w.SetPause(PauseState{Queues: map[string]bool{"q": true}})
	f.heal(ids[0])
	w.SetPause(PauseState{})
	waitFor(t, "both messages to run", func() bool { return len(ex.runList()) == 4 })
	want := []string{ids[0] + "#0", ids[0] + "#1", ids[0] + "#0", ids[1] + "#0"}
	if have := ex.runList(); !slices.Equal(have, want) {
		t.Fatalf("runs: want %v, have %v", want, have)
	}
	waitFor(t, "the trim of both", func() bool { // envelopes and starts
		n, err := r.rdb.HLen(context.Background(), r.key("q", "msg"))
		return err == nil && n == 0
	})
}

// Recording starts costs one command per message, pipelined, and a first
// start on a key claimed quiet costs none. The first half of the queues are
// claimed with their message in the log: a previous owner may have started
// it, so its start waits for its record (one HINCRBY). The second half are
// claimed quiet and their message comes after the claim's check: its start
// is held and dropped when the task succeeds (docs/decisions.md, "Issue
// 43: a key claimed quiet takes its first message from its wake-up").
// What ends a hold early is something that needs the records pending (an
// awaited record, a trim's wait), and a batch holds every queue's, so the
// second half runs one queue at a time, after the first half is trimmed,
// and the hold is an hour: under a loaded CI machine the 10 ms hold, or
// another queue's trim, sent one of them (101 HINCRBYs). The
// figure (every Redis command a simple successful message alone on its
// queue costs, its enqueue and its share of the claims' check included,
// counted by INFO commandstats with the commands that Lua scripts call) is
// logged for docs/decisions.md ("Issue 40: attempts live with the
// message").
func TestStartRecordCostsOneCommandPerMessage(t *testing.T) {
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	r := newRedisStore(t, srv.Addr)
	ctx := context.Background()
	const queues = 200
	name := func(i int) string { return fmt.Sprintf("q%03d", i) }
	ex := &scriptedExecutor{}
	w := redisWorker(t, "a", r, ex, nil)
	w.starts.hold = time.Hour // a held start leaves only when something needs it
	if err := r.rdb.ResetStats(ctx); err != nil {
		t.Fatal(err)
	}
	trimmed := func(from, to int) func() bool {
		return func() bool {
			for i := from; i < to; i++ {
				// TYPE: a command the worker never sends, left out below.
				if typ, err := r.rdb.Type(ctx, r.key(name(i), "msg")); err != nil || typ != "none" {
					return false
				}
			}
			return true
		}
	}
	for i := range queues / 2 {
		r.enqueue(t, name(i), `{}`)
	}
	for i := range queues {
		if err := w.Start(queueConfig(name(i), nil), &memClaim{}); err != nil {
			t.Fatal(err)
		}
	}
	allChecked(t, w)
	waitFor(t, "the first half to run", func() bool { return len(ex.runList()) == queues/2 })
	waitFor(t, "the first half to be trimmed", trimmed(0, queues/2))
	for i := queues / 2; i < queues; i++ {
		r.enqueue(t, name(i), `{}`)
		w.Wake(name(i)) // what the member's wake-up subscription does
		waitFor(t, name(i)+"'s message to run", func() bool { return len(ex.runList()) == i+1 })
		waitFor(t, name(i)+"'s message to be trimmed", trimmed(i, i+1))
	}
	allParked(t, w)
	stats, err := r.rdb.Info(ctx, "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	total, byCmd := commandCalls(stats)
	t.Logf("Redis commands per message (enqueue, wake-up, check, read, start, commit's trim): %.2f; %v", float64(total)/queues, byCmd)
	if n := byCmd["hincrby"]; n != queues/2 {
		t.Fatalf("HINCRBY: want one per start on the queues claimed with their message (%d) and none on those claimed quiet, have %d", queues/2, n)
	}
}

// commandCalls sums the calls of INFO commandstats, leaving out INFO and
// CONFIG and TYPE (the test's own) and HELLO (a connection's).
func commandCalls(info string) (int, map[string]int) {
	by := map[string]int{}
	total := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		if name == "info" || name == "hello" || name == "type" || strings.HasPrefix(name, "config") {
			continue
		}
		var calls int
		if _, err := fmt.Sscanf(rest, "calls=%d", &calls); err != nil {
			continue
		}
		by[name] = calls
		total += calls
	}
	return total, by
}
