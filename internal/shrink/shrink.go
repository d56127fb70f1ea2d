// Package shrink gives back the memory of maps that were once much larger
// than they are.
//
// A Go map keeps the table of its largest size for good: deleting its
// entries frees none of it. A worker's map of owned queues that held
// 50,000 keys during a churn keeps about 2 MB after those keys are
// retired, and so does each of the reconciler's per-queue maps
// (docs/decisions.md, "Issue 40: an idle worker's memory after a churn").
package shrink

// MinPeak is the smallest peak worth a rebuild: below it a map's table is
// a few tens of kilobytes at most.
const MinPeak = 1024

// Map returns m, or a copy of m sized for its entries when it holds at
// most a quarter of peak, the most entries it was seen with (*peak is
// updated). Call it after deleting from m: a rebuild costs O(len(m)) and
// comes only after m lost three quarters of its entries, so its cost per
// deletion is O(1). The copy is a new map: whoever holds m keeps the old
// one.
func Map[K comparable, V any](m map[K]V, peak *int) map[K]V {
	n := len(m)
	if n > *peak {
		*peak = n
		return m
	}
	if *peak < MinPeak || n > *peak/4 {
		return m
	}
	c := make(map[K]V, n) // not maps.Clone: a clone may keep the old table's size
	for k, v := range m {
		c[k] = v
	}
	*peak = n
	return c
}
