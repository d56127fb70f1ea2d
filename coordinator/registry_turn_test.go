package coordinator

import (
	"slices"
	"sync"
	"testing"

	"github.com/drover-dev/drover/internal/testing/testkit"
)

// TestARegistrationTakesTheTurnBeforeAWaitingRetirement: with a
// retirement and a registration both waiting, the registration writes
// first, whichever came first (a new key waits on it; with a plain mutex
// the retirement that waited longer went first).
func TestARegistrationTakesTheTurnBeforeAWaitingRetirement(t *testing.T) {
	var turn registryTurn
	turn.lockRetire() // a sweep step writing
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	run := func(name string, lock func()) {
		defer wg.Done()
		lock()
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
		turn.unlock()
	}
	wg.Add(1)
	go run("retire", turn.lockRetire)
	testkit.Eventually(t, "the retirement waits", func() bool { _, r := turn.waiters(); return r == 1 })
	wg.Add(1)
	go run("register", turn.lockRegister)
	testkit.Eventually(t, "the registration waits", func() bool { c, _ := turn.waiters(); return c == 1 })
	turn.unlock()
	wg.Wait()
	if want := []string{"register", "retire"}; !slices.Equal(order, want) {
		t.Fatalf("turns taken in the order %v, want %v", order, want)
	}
}

// TestAYieldHandsTheTurnToWaitingRegistrations: a retirement that yields
// between its waves lets every registration waiting write, and has the
// turn back when yield returns; with none waiting it keeps the turn.
func TestAYieldHandsTheTurnToWaitingRegistrations(t *testing.T) {
	var turn registryTurn
	turn.lockRetire()
	if turn.yield() {
		t.Fatal("yield handed the turn over with no registration waiting")
	}
	registered := make(chan struct{})
	go func() {
		turn.lockRegister()
		close(registered)
		turn.unlock()
	}()
	testkit.Eventually(t, "the registration waits", func() bool { c, _ := turn.waiters(); return c == 1 })
	if !turn.yield() {
		t.Fatal("yield kept the turn from a waiting registration")
	}
	select {
	case <-registered:
	default:
		t.Fatal("yield returned before the waiting registration wrote")
	}
	// The retirement holds the turn again: a registration now waits.
	again := make(chan struct{})
	go func() {
		turn.lockRegister()
		close(again)
		turn.unlock()
	}()
	testkit.Eventually(t, "the second registration waits", func() bool { c, _ := turn.waiters(); return c == 1 })
	select {
	case <-again:
		t.Fatal("a registration wrote while the retirement held the turn")
	default:
	}
	turn.unlock()
	<-again
}
