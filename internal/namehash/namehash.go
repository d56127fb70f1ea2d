// Package namehash holds the hashes of queue names that placement and the
// ZooKeeper layout agree on: FNV-1a, 32 and 64 bits, computed in place
// (hash/fnv allocates a hasher and a copy of the name, and these run for
// every queue of a million-queue fleet on every change of members).
//
// What agrees on them: the registry bucket of a queue (FNV32a mod 1024,
// docs/zookeeper-layout.md), the chunk of a member's share that holds it
// (FNV32a mod a power of two), and the order in which a member gives its
// queues up (rebalance's move rank, which ranks first the queues of one
// chunk, so that a join rewrites a chunk of each donor, not every chunk).
package namehash

// FNV32a is the 32-bit FNV-1a hash of name (hash/fnv's New32a).
func FNV32a(name string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h ^= uint32(name[i])
		h *= 16777619
	}
	return h
}

// FNV64a is the 64-bit FNV-1a hash of name (hash/fnv's New64a).
func FNV64a(name string) uint64 {
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= prime64
	}
	return h
}
