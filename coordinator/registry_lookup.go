package coordinator

import "slices"

// Lookup returns queue as the registry lists it, and whether it does: the
// rebalance leader reads the weight of a queue removed since a snapshot
// from that snapshot (issue 40), at a cost that does not grow with the
// registry.
func (r Registry) Lookup(queue string) (RegisteredQueue, bool) {
	if r.names != nil {
		i, ok := slices.BinarySearch(r.names, registryBucket(queue))
		if !ok {
			return RegisteredQueue{}, false
		}
		b := r.buckets[i]
		lo, hi := 0, b.len()
		for lo < hi { // the bucket is sorted by name as decoded
			mid := (lo + hi) / 2
			if b.nameAt(mid) < queue {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if lo < b.len() && b.nameAt(lo) == queue {
			return b.at(lo), true
		}
		return RegisteredQueue{}, false
	}
	for _, b := range r.buckets { // NewRegistry's bucket is not sorted
		for i := range b.len() {
			if b.nameAt(i) == queue {
				return b.at(i), true
			}
		}
	}
	return RegisteredQueue{}, false
}
