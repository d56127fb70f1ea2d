package shrink

import (
	"fmt"
	"runtime"
	"testing"
)

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A map that lost most of its entries is rebuilt, with the same entries;
// one that lost fewer, or that was never large, is kept as it is.
func TestMapIsRebuiltOnlyAfterLosingThreeQuarters(t *testing.T) {
	m := map[int]int{}
	peak := 0
	for i := range 4 * MinPeak {
		m[i] = i
		m = Map(m, &peak)
	}
	if peak != 4*MinPeak {
		t.Fatalf("peak: want %d, have %d", 4*MinPeak, peak)
	}
	orig := fmt.Sprintf("%p", m)
	for i := range 3*MinPeak - 1 { // one more than a quarter left
		delete(m, i)
		m = Map(m, &peak)
	}
	if fmt.Sprintf("%p", m) != orig {
		t.Fatal("a map that kept more than a quarter of its peak: want it kept, have a copy")
	}
	delete(m, 3*MinPeak-1)
	m = Map(m, &peak)
	if fmt.Sprintf("%p", m) == orig {
		t.Fatal("a map down to a quarter of its peak: want a copy, have the same map")
	}
	if peak != MinPeak || len(m) != MinPeak {
		t.Fatalf("after the rebuild: want %d entries and that peak, have %d and %d", MinPeak, len(m), peak)
	}
	for i := 3 * MinPeak; i < 4*MinPeak; i++ {
		if m[i] != i {
			t.Fatalf("entry %d: want %d, have %d", i, i, m[i])
		}
	}

	small, p := map[int]int{}, 0
	for i := range MinPeak - 1 {
		small[i] = i
		small = Map(small, &p)
	}
	orig = fmt.Sprintf("%p", small)
	for i := range MinPeak - 1 {
		delete(small, i)
		small = Map(small, &p)
	}
	if fmt.Sprintf("%p", small) != orig {
		t.Fatal("a map that never reached MinPeak: want it kept, have a copy")
	}
}

// What the rebuild is for: the table of a map emptied of most of its
// entries is given back.
func TestMapGivesTheTableBack(t *testing.T) {
	const n = 100_000
	m, peak := map[string]*int{}, 0
	for i := range n {
		m[fmt.Sprintf("queue-%06d", i)] = new(int)
	}
	m = Map(m, &peak)
	full := liveHeap()
	for i := range n - n/10 {
		delete(m, fmt.Sprintf("queue-%06d", i))
		m = Map(m, &peak)
	}
	after := liveHeap()
	runtime.KeepAlive(m)
	// The 10,000 entries left, their keys and values, take well under a
	// quarter of the full map; the table kept would be most of it.
	if after > full/4 {
		t.Fatalf("%d of %d entries left: want at most a quarter of the full map's heap (%d bytes), have %d", len(m), n, full/4, after)
	}
}
