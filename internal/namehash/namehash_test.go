package namehash

import (
	"hash/fnv"
	"testing"
)

// Both are hash/fnv's FNV-1a: the registry's buckets, the share chunks and
// the move ranks of every fleet written before stay where they were.
func TestTheHashesAreHashFNVs(t *testing.T) {
	for _, name := range []string{"", "a", "queue-000001", "tenant/über-42", "q123456"} {
		h32 := fnv.New32a()
		h32.Write([]byte(name))
		if got, want := FNV32a(name), h32.Sum32(); got != want {
			t.Fatalf("FNV32a(%q) = %x, want %x", name, got, want)
		}
		h64 := fnv.New64a()
		h64.Write([]byte(name))
		if got, want := FNV64a(name), h64.Sum64(); got != want {
			t.Fatalf("FNV64a(%q) = %x, want %x", name, got, want)
		}
	}
}
