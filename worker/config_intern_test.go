package worker

import (
	"testing"

	"github.com/drover-dev/drover"
)

// Queues configured alike share one configuration (defaults applied, name
// cleared); a changed queue gets its own, and the others keep theirs.
func TestQueuesConfiguredAlikeShareOneConfig(t *testing.T) {
	log := newMemLog()
	w, _ := newIdleWorker(t, log, &scriptedExecutor{})
	for _, q := range []string{"a", "b", "c"} {
		if err := w.Start(queueConfig(q, nil), &memClaim{}); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := w.loop("a").config(), w.loop("b").config(), w.loop("c").config()
	if a != b || b != c {
		t.Fatalf("three queues configured alike: want one shared config, have %p %p %p", a, b, c)
	}
	if a.Name != "" || a.Timeout == 0 {
		t.Fatalf("the shared config: want no name and defaults applied, have name %q timeout %v", a.Name, a.Timeout)
	}
	if err := w.Configure(queueConfig("b", func(qc *drover.QueueConfig) { qc.Concurrency = 9 })); err != nil {
		t.Fatal(err)
	}
	if nb := w.loop("b").config(); nb == a || nb.Concurrency != 9 {
		t.Fatalf("b reconfigured: want its own config with concurrency 9, have %p (shared %p) concurrency %d", nb, a, nb.Concurrency)
	}
	if w.loop("a").config() != a || a.Concurrency != 4 {
		t.Fatalf("a: want the shared config with concurrency 4 untouched, have concurrency %d", w.loop("a").config().Concurrency)
	}
}

// Past maxInternedConfigs distinct configurations a new one is private:
// still correct, not remembered.
func TestConfigInternerIsBounded(t *testing.T) {
	var in configInterner
	for i := range maxInternedConfigs + 10 {
		in.intern(drover.QueueConfig{Name: "q", Concurrency: i + 1})
	}
	if n := len(in.configs); n != maxInternedConfigs {
		t.Fatalf("want %d shared configs, have %d", maxInternedConfigs, n)
	}
	x, y := in.intern(drover.QueueConfig{Concurrency: 1e6}), in.intern(drover.QueueConfig{Concurrency: 1e6})
	if x == y || x.Concurrency != 1e6 {
		t.Fatalf("past the bound: want private copies with the asked concurrency, have %p %p (%d)", x, y, x.Concurrency)
	}
	if in.intern(drover.QueueConfig{Name: "other", Concurrency: 1}) != in.intern(drover.QueueConfig{Concurrency: 1}) {
		t.Fatal("a config registered before the bound is still shared, whatever the queue's name")
	}
}
