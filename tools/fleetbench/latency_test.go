package fleetbench

import (
	"path/filepath"
	"testing"
	"time"
)

func TestQuantilesWithinOneBucket(t *testing.T) {
	var h Histogram
	// 1..1000 ms: the p50 is 500 ms, the p99 990 ms, the max 1 s.
	for i := 1; i <= 1000; i++ {
		h.Observe(time.Duration(i) * time.Millisecond)
	}
	s := h.Snapshot()
	if s.Total() != 1000 {
		t.Fatalf("total: want 1000, have %d", s.Total())
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.99, 990 * time.Millisecond}, {1, time.Second}} {
		have := s.Quantile(c.q)
		// The reported bound is the bucket's upper edge: never below the
		// true value, at most 2% above it.
		if have < c.want || float64(have) > float64(c.want)*growth*growth {
			t.Errorf("q%.2f: want %s (up to +2%%), have %s", c.q, c.want, have)
		}
	}
}

func TestSnapshotSubtractsAnEarlierWindow(t *testing.T) {
	var h Histogram
	for i := 0; i < 100; i++ {
		h.Observe(time.Second) // before the window: slow
	}
	before := h.Snapshot()
	for i := 0; i < 10; i++ {
		h.Observe(time.Millisecond)
	}
	w := h.Snapshot()
	w.Sub(&before)
	if w.Total() != 10 {
		t.Fatalf("window total: want 10, have %d", w.Total())
	}
	if p := w.Quantile(1); p > 2*time.Millisecond {
		t.Errorf("window max: want about 1ms, have %s (the earlier slow ones leaked in)", p)
	}
}

func TestNegativeAndHugeLatenciesStayInRange(t *testing.T) {
	var h Histogram
	h.Observe(-time.Second)     // clocks disagreeing a little
	h.Observe(1000 * time.Hour) // beyond the last bucket
	s := h.Snapshot()
	if s.Total() != 2 || s.Counts[0] != 1 || s.Counts[numBuckets-1] != 1 {
		t.Fatalf("want one count in the first and one in the last bucket, have total %d, first %d, last %d", s.Total(), s.Counts[0], s.Counts[numBuckets-1])
	}
}

func TestSnapshotFileRoundTrip(t *testing.T) {
	var h Histogram
	for i := 1; i <= 50; i++ {
		h.Observe(time.Duration(i) * 37 * time.Microsecond)
	}
	path := filepath.Join(t.TempDir(), "lat")
	missing, err := ReadSnapshot(path)
	if err != nil || missing.Total() != 0 {
		t.Fatalf("a file not written yet: want an empty snapshot, have total %d, err %v", missing.Total(), err)
	}
	want := h.Snapshot()
	if err := want.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	have, err := ReadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	if have != want {
		t.Fatalf("read back a different snapshot: want total %d, have %d", want.Total(), have.Total())
	}
}

func TestPublishWritesTheFile(t *testing.T) {
	var h Histogram
	path := filepath.Join(t.TempDir(), "lat")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { h.Publish(path, time.Millisecond, stop); close(done) }()
	defer func() { close(stop); <-done }()
	h.Observe(3 * time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := ReadSnapshot(path)
		if err != nil {
			t.Fatal(err)
		}
		if s.Total() == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the published file never held the observation (total %d)", s.Total())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
