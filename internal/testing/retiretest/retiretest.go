// Package retiretest runs a queue family registrar on a clock a test
// moves, so that tests of the listings (ctl status, the console) can
// retire family keys without waiting for retire_after.
package retiretest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/registrar"
)

// Registrar is a registrar.Registrar run as a rebalance leader's term runs
// it, on a registry watch of its own and a fake clock.
type Registrar struct {
	// Clock is what the registrar measures idle times by: advance it past
	// a family's retire_after to retire its idle keys.
	Clock *testkit.Clock
	// Retired receives the name of every queue retired.
	Retired <-chan string
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Start runs a registrar on zk and store, sweeping every few milliseconds,
// until Stop or the end of the test. It returns once the registrar hears
// enqueues.
func Start(t testing.TB, zk *coordinator.Session, store *queue.Store) *Registrar {
	t.Helper()
	retired := make(chan string, 1024)
	r := &Registrar{Clock: testkit.NewClock(time.Now()), Retired: retired}
	ready := make(chan struct{})
	reg, err := registrar.New(registrar.Config{
		Registry: registrar.ZooKeeper(zk), Redis: store.Families(), Clock: handAdvanced{r.Clock},
		SweepEvery: 10 * time.Millisecond, ScanEvery: time.Hour,
		OnReady:   func() { close(ready) },
		OnRetired: func(q, _ string) { retired <- q },
		Logger:    testkit.Logger(t, hclog.Warn),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	t.Cleanup(r.Stop)
	regs := zk.Queues().WatchRegistry(ctx)
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		for s := range regs {
			reg.Observe(s)
		}
	}()
	go func() { defer r.wg.Done(); _ = reg.Run(ctx) }()
	select {
	case <-ready:
	case <-time.After(time.Minute):
		t.Fatal("gave up waiting for the registrar to subscribe to the wake-ups")
	}
	return r
}

// WaitRetired waits until every queue of qs has been retired.
func (r *Registrar) WaitRetired(t testing.TB, qs ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, q := range qs {
		want[q] = true
	}
	deadline := time.After(time.Minute) // bounds a broken test only
	for len(want) > 0 {
		select {
		case q := <-r.Retired:
			delete(want, q)
		case <-deadline:
			t.Fatalf("gave up waiting for %v to be retired", want)
		}
	}
}

// Stop ends the registrar and waits for it.
func (r *Registrar) Stop() {
	r.cancel()
	r.wg.Wait()
}

// handAdvanced is a Clock the test moves forward by hand (Advance: idle
// times jump) whose timers run at the wall clock's pace, so that the
// registrar's flushes and sweeps go on against the real servers.
type handAdvanced struct{ *testkit.Clock }

func (handAdvanced) NewTimer(d time.Duration) drover.Timer { return drover.SystemClock{}.NewTimer(d) }
