package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// reconcilerRun is one reconciler on fakes.
type reconcilerRun struct {
	s      *fakeSession
	r      *fakeRunner
	gens   chan int64
	cancel context.CancelFunc
	done   chan error
}

// startReconciler starts a reconciler on fakes; mods adjust its config.
func startReconciler(t *testing.T, mods ...func(*ReconcilerConfig)) *reconcilerRun {
	t.Helper()
	rr := &reconcilerRun{s: newFakeSession(), r: newFakeRunner(), gens: make(chan int64, 64), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	rr.cancel = cancel
	cfg := ReconcilerConfig{
		Session: rr.s, Member: "me", MemberPath: "/members/me", Runner: rr.r,
		OnGeneration: func(g int64) { rr.gens <- g }, Logger: testkit.Logger(t, hclog.Warn),
	}
	for _, mod := range mods {
		mod(&cfg)
	}
	go func() { rr.done <- RunReconciler(ctx, cfg) }()
	t.Cleanup(func() { cancel(); <-rr.done })
	return rr
}

// owning waits until the runner runs exactly want.
func (rr *reconcilerRun) owning(t *testing.T, want ...string) {
	t.Helper()
	slices.Sort(want)
	testkit.Eventually(t, fmt.Sprintf("the runner to run %v", want), func() bool { return slices.Equal(rr.r.owned(), want) })
}

func mine(qs ...string) map[string]string {
	out := map[string]string{}
	for _, q := range qs {
		out[q] = "me"
	}
	return out
}

func TestReconcilerFollowsTheAssignment(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, rr *reconcilerRun)
	}{
		{"gained queues are claimed and started with their config", func(t *testing.T, rr *reconcilerRun) {
			rr.s.assign(1, mine("a", "b"))
			rr.owning(t, "a", "b")
			if c := rr.r.configs["a"].Concurrency; c != 3 {
				t.Fatalf("want the config read after the claim (concurrency 3), have %d", c)
			}
		}},
		{"a config change reaches the runner, an unchanged config does not", func(t *testing.T, rr *reconcilerRun) {
			// The reconciler keeps a digest of each owned queue's config,
			// not a copy: what it passes on must still be the changes only.
			rr.s.assign(1, mine("a"))
			rr.owning(t, "a")
			rr.s.mu.Lock()
			cw := rr.s.cfgWatch
			rr.s.mu.Unlock()
			cw.out <- coordinator.QueueEntry{Name: "a", Config: drover.QueueConfig{Name: "a", Concurrency: 3}} // as read at the claim
			cw.out <- coordinator.QueueEntry{Name: "a", Config: drover.QueueConfig{Name: "a", Concurrency: 5}}
			cw.out <- coordinator.QueueEntry{Name: "a", Config: drover.QueueConfig{Name: "a", Concurrency: 5}} // again, unchanged
			cw.out <- coordinator.QueueEntry{Name: "a", Config: drover.QueueConfig{Name: "a", Concurrency: 7}}
			testkit.Eventually(t, "a's config change to reach the runner", func() bool {
				rr.r.mu.Lock()
				defer rr.r.mu.Unlock()
				return rr.r.configs["a"].Concurrency == 7
			})
			rr.r.mu.Lock()
			n := rr.r.configures["a"]
			rr.r.mu.Unlock()
			if n != 2 {
				t.Fatalf("four deliveries, two of them changes: want 2 Configure calls, have %d", n)
			}
		}},
		{"a finished claim's context is released while the queue runs", func(t *testing.T, rr *reconcilerRun) {
			// A claim context left live stays registered with the
			// reconciler's context: memory per queue ever claimed.
			rr.s.assign(1, mine("a"))
			rr.owning(t, "a")
			testkit.Eventually(t, "a's claim context to be released", func() bool {
				ctx := rr.s.claimCtx("a")
				return ctx != nil && ctx.Err() != nil
			})
			rr.owning(t, "a")
		}},
		{"a queue claimed without a configuration is released unrun until one appears", func(t *testing.T, rr *reconcilerRun) {
			// A queue retired after the target that assigned it here has no
			// configuration: started with defaults it has no task routes, and
			// every message enqueued to it meanwhile was dead-lettered as "no
			// route" (found by the chaos run's key-churn kind).
			rr.s.assign(1, mine("a"))
			rr.owning(t, "a")
			rr.s.mu.Lock()
			cw := rr.s.cfgWatch
			rr.s.mu.Unlock()
			cw.setMissing("b", true)
			rr.s.assign(2, mine("a", "b"))
			testkit.Eventually(t, "b claimed, then its owner node released", func() bool {
				return rr.s.claimCount("b") == 1 && rr.s.owner("b") == nil
			})
			if n := rr.r.count(rr.r.starts, "b"); n != 0 {
				t.Fatalf("b has no configuration: want it never started, have %d starts", n)
			}
			cw.setMissing("b", false)
			cw.out <- coordinator.QueueEntry{Name: "b", Config: drover.QueueConfig{Name: "b", Concurrency: 4}}
			rr.owning(t, "a", "b")
			rr.r.mu.Lock()
			c := rr.r.configs["b"].Concurrency
			rr.r.mu.Unlock()
			if c != 3 && c != 4 {
				t.Fatalf("want b started with its configuration, have concurrency %d", c)
			}
		}},
		{"queues of other members are not claimed", func(t *testing.T, rr *reconcilerRun) {
			rr.s.assign(1, map[string]string{"a": "me", "b": "other"})
			rr.owning(t, "a")
			if n := rr.s.claimCount("b"); n != 0 {
				t.Fatalf("b belongs to another member: want no claim, have %d", n)
			}
		}},
		{"a queue that moves away is stopped, the others keep running", func(t *testing.T, rr *reconcilerRun) {
			rr.s.assign(1, mine("a", "b", "c"))
			rr.owning(t, "a", "b", "c")
			rr.s.assign(2, map[string]string{"a": "me", "b": "other", "c": "me"})
			rr.owning(t, "a", "c")
			testkit.Eventually(t, "b's owner node to go", func() bool { return rr.s.owner("b") == nil })
			for _, q := range []string{"a", "c"} {
				if s, st := rr.r.count(rr.r.starts, q), rr.r.count(rr.r.stops, q); s != 1 || st != 0 {
					t.Fatalf("%s stays: want 1 start and no stop, have %d starts and %d stops", q, s, st)
				}
			}
		}},
		{"an older generation is ignored", func(t *testing.T, rr *reconcilerRun) {
			rr.s.assign(5, mine("a"))
			rr.owning(t, "a")
			rr.s.assign(4, mine("b"))
			rr.s.assign(6, mine("a", "c"))
			rr.owning(t, "a", "c")
			if n := rr.s.claimCount("b"); n != 0 {
				t.Fatalf("generation 4 is older than 5: want b never claimed, have %d claims", n)
			}
		}},
		{"a queue still owned elsewhere is claimed once released", func(t *testing.T, rr *reconcilerRun) {
			rr.s.mu.Lock()
			rr.s.blocked["a"] = true
			rr.s.mu.Unlock()
			rr.s.assign(1, mine("a", "b"))
			rr.owning(t, "b")
			rr.s.unblock("a")
			rr.owning(t, "a", "b")
			rr.s.mu.Lock()
			checks := rr.s.orphanChecks
			rr.s.mu.Unlock()
			if checks != 0 {
				// Issue 43: the claim saw another session's node; no
				// orphan of ours to look for.
				t.Fatalf("a held by another session: want no orphan check, have %d", checks)
			}
		}},
		{"a claim abandoned by a newer target is not started", func(t *testing.T, rr *reconcilerRun) {
			rr.s.mu.Lock()
			rr.s.blocked["a"] = true
			rr.s.mu.Unlock()
			rr.s.assign(1, mine("a"))
			testkit.Eventually(t, "generation 1 applied", func() bool { return <-rr.gens == 1 })
			rr.s.assign(2, mine("b"))
			rr.owning(t, "b")
			rr.s.unblock("a")
			rr.s.assign(3, mine("b", "c")) // a later round: a's claim would have landed by now
			rr.owning(t, "b", "c")
			if n := rr.s.claimCount("a"); n != 0 {
				t.Fatalf("a left the target while waiting: want no claim, have %d", n)
			}
		}},
		{"a start that fails hands the claim back", func(t *testing.T, rr *reconcilerRun) {
			rr.r.mu.Lock()
			rr.r.startErr = errors.New("injected")
			rr.r.mu.Unlock()
			rr.s.assign(1, mine("a"))
			testkit.Eventually(t, "a claimed", func() bool { return rr.s.claimCount("a") > 0 })
			testkit.Eventually(t, "a's owner node given back", func() bool { return rr.s.owner("a") == nil })
		}},
		{"a lost session aborts every queue and ends the reconciler", func(t *testing.T, rr *reconcilerRun) {
			rr.s.assign(1, mine("a", "b"))
			rr.owning(t, "a", "b")
			rr.s.lose()
			if err := <-rr.done; !errors.Is(err, drover.ErrSessionLost) {
				t.Fatalf("want an error wrapping ErrSessionLost, have %v", err)
			}
			rr.done <- nil // for the cleanup
			for _, q := range []string{"a", "b"} {
				if n := rr.r.count(rr.r.aborts, q); n != 1 {
					t.Fatalf("%s: want 1 abort, have %d", q, n)
				}
				if n := rr.r.count(rr.r.stops, q); n != 0 {
					t.Fatalf("%s: a lost session writes nothing: want no stop, have %d", q, n)
				}
			}
		}},
		{"the end of ctx stops and releases every queue", func(t *testing.T, rr *reconcilerRun) {
			rr.s.assign(1, mine("a", "b"))
			rr.owning(t, "a", "b")
			rr.cancel()
			if err := <-rr.done; !errors.Is(err, context.Canceled) {
				t.Fatalf("want context.Canceled, have %v", err)
			}
			rr.done <- nil
			for _, q := range []string{"a", "b"} {
				if rr.s.owner(q) != nil {
					t.Fatalf("%s: want its owner node released", q)
				}
			}
		}},
		{"more gained queues than claim goroutines: the rest wait in line, and leave it when the target moves on", func(t *testing.T, rr *reconcilerRun) {
			n := maxClaimGoroutines + 100
			var all []string
			rr.s.mu.Lock()
			for i := range n {
				q := fmt.Sprintf("q%04d", i)
				all = append(all, q)
				rr.s.blocked[q] = true // owned elsewhere: every claim goroutine waits for a release
			}
			rr.s.mu.Unlock()
			rr.s.assign(1, mine(all...))
			<-rr.gens
			testkit.Eventually(t, "every claim goroutine waiting for a release", func() bool {
				rr.s.mu.Lock()
				defer rr.s.mu.Unlock()
				return rr.s.waiters == maxClaimGoroutines
			})
			// Claims start in name order: the last 100 wait in line. Keep
			// the first queue and the last 50.
			keep := append([]string{all[0]}, all[n-50:]...)
			rr.s.assign(2, mine(keep...))
			<-rr.gens
			for _, q := range all {
				rr.s.unblock(q)
			}
			rr.owning(t, keep...)
			rr.s.mu.Lock()
			most := rr.s.maxWaiters
			rr.s.mu.Unlock()
			if most > maxClaimGoroutines {
				t.Fatalf("want at most %d claims waiting at once, have %d", maxClaimGoroutines, most)
			}
			for _, q := range all[maxClaimGoroutines : n-50] {
				if c := rr.s.claimCount(q); c != 0 {
					t.Fatalf("%s left the line when the target dropped it: want no claim, have %d", q, c)
				}
			}
		}},
		{"a queue lost by the runner is claimed again", func(t *testing.T, rr *reconcilerRun) {
			rr.s.assign(1, mine("a", "b"))
			rr.owning(t, "a", "b")
			rr.s.owner("a").fence()
			if _, err := rr.r.commit("a"); !errors.Is(err, drover.ErrFenced) {
				t.Fatalf("want the commit fenced, have %v", err)
			}
			testkit.Eventually(t, "a claimed again", func() bool { return rr.s.claimCount("a") == 2 })
			rr.owning(t, "a", "b")
			if n := rr.r.count(rr.r.starts, "b"); n != 1 {
				t.Fatalf("b was not lost: want 1 start, have %d", n)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, startReconciler(t)) })
	}
}

// Defect (issue 13): the lost-queue signal was relayed through a 256-slot
// channel that dropped when full, and a dropped report left the queue dead
// until the assignment changed. Now the claim reports its own end and no
// report can be dropped, however many queues are lost at once.
func TestEveryLostQueueIsClaimedAgainHoweverManyAtOnce(t *testing.T) {
	rr := startReconciler(t)
	const n = 300 // more than the old relay buffered
	qs := make([]string, n)
	for i := range qs {
		qs[i] = fmt.Sprintf("q%03d", i)
	}
	rr.s.assign(1, mine(qs...))
	rr.owning(t, qs...)
	for _, q := range qs {
		rr.s.owner(q).fence()
	}
	for _, q := range qs { // every queue loop's commit is refused at once
		if _, err := rr.r.commit(q); !errors.Is(err, drover.ErrFenced) {
			t.Fatalf("%s: want the commit fenced, have %v", q, err)
		}
	}
	testkit.Eventually(t, "every lost queue claimed again", func() bool {
		for _, q := range qs {
			if rr.s.claimCount(q) != 2 || rr.r.count(rr.r.starts, q) != 2 {
				return false
			}
		}
		return true
	})
}

// A session lost while a queue is being handed back (its tasks draining)
// cuts the drain at once: the reconciler returns without waiting for the
// drain to end, and the tasks are aborted (DESIGN.md §11, "Session loss").
func TestASessionLostMidDrainAbortsTheDrainingQueue(t *testing.T) {
	rr := startReconciler(t)
	rr.s.assign(1, mine("a", "b"))
	rr.owning(t, "a", "b")
	rr.r.mu.Lock()
	rr.r.drain = make(chan struct{}) // closed only at the end: the tasks would run on
	rr.r.mu.Unlock()
	t.Cleanup(func() { close(rr.r.drain) }) // before the reconciler's cleanup waits for it
	rr.s.assign(2, map[string]string{"a": "other", "b": "me"})
	testkit.Eventually(t, "a's drain to begin", func() bool { return rr.r.count(rr.r.stops, "a") == 1 })
	rr.s.lose()
	select {
	case err := <-rr.done:
		rr.done <- err // for the cleanup
		if !errors.Is(err, drover.ErrSessionLost) {
			t.Fatalf("want an error wrapping ErrSessionLost, have %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("the reconciler still waits for a's drain a second after the session was lost")
	}
	if n := rr.r.count(rr.r.drainsCut, "a"); n != 1 {
		t.Fatalf("want a's drain cut by the loss once, have %d", n)
	}
	if n := rr.r.count(rr.r.aborts, "b"); n != 1 {
		t.Fatalf("want b (still owned) aborted once, have %d", n)
	}
}

// A share delivered as chunks is applied chunk by chunk: only the chunks
// whose generation moved are compared, a queue an appended (New) chunk
// adds is claimed as new, a queue that moved to another chunk (a whole
// write folding the appended ones) is neither stopped nor claimed again,
// and a queue no chunk lists any more is stopped.
func TestReconcilerAppliesTheChunksOfAShareThatChanged(t *testing.T) {
	rr := startReconciler(t)
	share := func(gen int64, chunks ...coordinator.ShareChunk) {
		rr.s.assignments <- coordinator.AssignmentNode{Assignment: drover.Assignment{Generation: gen}, Share: chunks}
	}
	chunk := func(gen int64, isNew bool, qs ...string) coordinator.ShareChunk {
		return coordinator.ShareChunk{Generation: gen, Queues: qs, New: isNew}
	}
	hashed := chunk(1, false, "a", "b")
	share(1, hashed)
	rr.owning(t, "a", "b")
	share(2, hashed, chunk(2, true, "c", "d"))
	rr.owning(t, "a", "b", "c", "d")
	share(3, hashed, chunk(3, true, "c", "d", "e"))
	rr.owning(t, "a", "b", "c", "d", "e")
	rr.s.mu.Lock()
	fresh := map[string]bool{"a": rr.s.fresh["a"], "c": rr.s.fresh["c"], "e": rr.s.fresh["e"]}
	rr.s.mu.Unlock()
	if fresh["a"] || !fresh["c"] || !fresh["e"] {
		t.Fatalf("claims as new: want c and e (appended chunks), not a, have %v", fresh)
	}
	// A whole write folds the appended chunk: c, d and e move, b goes.
	share(4, chunk(4, false, "a", "c", "e"), chunk(4, false, "d"))
	rr.owning(t, "a", "c", "d", "e")
	for q, want := range map[string]int{"a": 1, "c": 1, "d": 1, "e": 1} {
		if n := rr.s.claimCount(q); n != want {
			t.Fatalf("%s: want %d claim, have %d", q, want, n)
		}
	}
	rr.r.mu.Lock()
	stops := maps.Clone(rr.r.stops)
	rr.r.mu.Unlock()
	if !maps.Equal(stops, map[string]int{"b": 1}) {
		t.Fatalf("stops: want b once, have %v", stops)
	}
}

func TestDiffSorted(t *testing.T) {
	var added, removed []string
	diffSorted([]string{"a", "c", "d", "f"}, []string{"b", "c", "f", "g"},
		func(q string) { added = append(added, q) }, func(q string) { removed = append(removed, q) })
	if !slices.Equal(added, []string{"b", "g"}) || !slices.Equal(removed, []string{"a", "d"}) {
		t.Fatalf("want added [b g], removed [a d]; have %v, %v", added, removed)
	}
}

// Defect (issue 40): the reconciler's per-queue maps kept the tables of
// the most queues the member ever owned; after a churn retired most of
// them, a member that owned 50,000 keys and then 10,000 kept six tables of
// 50,000. compact rebuilds a map once it is down to a quarter of its peak,
// and leaves the others alone.
func TestReconcilerMapsAreRebuiltAfterMostQueuesLeave(t *testing.T) {
	r := &reconciler{target: map[string]bool{}, owned: map[string]Claim{}, configSums: map[string]configSum{},
		claiming: map[string]context.CancelFunc{}, stopping: map[string]chan struct{}{}, handing: map[string]bool{}}
	const n = 20_000
	for i := range n {
		q := fmt.Sprintf("c-key-%07d", i)
		r.target[q], r.owned[q], r.configSums[q] = true, nil, configSum{}
	}
	for i := range n / 10 {
		r.handing[fmt.Sprintf("c-key-%07d", i)] = true
	}
	r.compact() // the peaks
	ptr := func(m any) string { return fmt.Sprintf("%p", m) }
	target, owned, sums, handing := ptr(r.target), ptr(r.owned), ptr(r.configSums), ptr(r.handing)
	for i := range n - n/4 { // a quarter left in target, owned and configSums; handing as it was
		q := fmt.Sprintf("c-key-%07d", i)
		delete(r.target, q)
		delete(r.owned, q)
		delete(r.configSums, q)
	}
	r.compact()
	if ptr(r.target) == target || ptr(r.owned) == owned || ptr(r.configSums) == sums {
		t.Fatal("target, owned and configSums down to a quarter of their peak: want them rebuilt, have the same maps")
	}
	if ptr(r.handing) != handing {
		t.Fatal("handing as large as ever: want it kept, have a copy")
	}
	if len(r.target) != n/4 || len(r.owned) != n/4 || len(r.configSums) != n/4 || len(r.handing) != n/10 {
		t.Fatalf("after the rebuild: want %d, %d, %d and %d entries, have %d, %d, %d and %d",
			n/4, n/4, n/4, n/10, len(r.target), len(r.owned), len(r.configSums), len(r.handing))
	}
	if q := fmt.Sprintf("c-key-%07d", n-1); !r.target[q] {
		t.Fatalf("%s: want it still in the target", q)
	}
}
