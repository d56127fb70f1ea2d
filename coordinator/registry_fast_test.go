package coordinator

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"
)

// registryBucket names the bucket every stored queue config lives under:
// it must stay FNV-1a modulo registryBuckets, in three hex digits.
func TestRegistryBucketIsFNV(t *testing.T) {
	r := rand.New(rand.NewPCG(40, 5))
	names := []string{"", "a", "cust-00000001", "é日本", "\xff"}
	for range 5000 {
		names = append(names, randomName(r, false))
	}
	for _, q := range names {
		h := fnv.New32a()
		h.Write([]byte(q))
		if want, have := fmt.Sprintf("%03x", h.Sum32()%registryBuckets), registryBucket(q); have != want {
			t.Fatalf("bucket of %q: want %s, have %s", q, want, have)
		}
	}
}

func TestPackedBucketHas(t *testing.T) {
	r := rand.New(rand.NewPCG(40, 6))
	for n := range 40 {
		b := bucketData{}
		for range n {
			b.Queues = append(b.Queues, randomName(r, true))
		}
		slices.Sort(b.Queues)
		b.Queues = slices.Compact(b.Queues)
		p := b.pack(map[string][]string{})
		for _, q := range append(slices.Clone(b.Queues), "", "~~~~", randomName(r, true)) {
			if want, have := slices.Contains(b.Queues, q), p.has(q); have != want {
				t.Fatalf("has(%q) of %q: want %v, have %v", q, b.Queues, want, have)
			}
		}
	}
}
