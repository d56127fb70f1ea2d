package coordinator

import (
	"fmt"
	"slices"
	"testing"
)

// The codec benchmarks: a registry bucket of 200 queues (what a bucket
// holds at about 200,000 queues) and a full share chunk
// (shareChunkBytes), encoded and decoded as the churn benchmark's leader
// does on every create, retire and placement (docs/decisions.md, "Issue
// 40: a hand-written codec for buckets and shares").

func benchBucket() bucketData {
	b := bucketData{Weight: map[string]int{}, Tags: map[string][]string{}, Revs: map[string]int64{}}
	for i := range 200 {
		q := fmt.Sprintf("cust-%08d-eu", i*7919)
		b.Queues = append(b.Queues, q)
		if i%20 == 0 {
			b.Weight[q] = 1 + i%5
			b.Tags[q] = []string{"gpu"}
		}
		if i%4 == 0 {
			b.Revs[q] = int64(i)
		}
	}
	return b
}

func benchChunk() ShareChunk {
	c := ShareChunk{Generation: 12345, Queues: []string{}}
	for size := 0; size < shareChunkBytes-32; {
		q := fmt.Sprintf("cust-%08d-eu", len(c.Queues)*7919)
		c.Queues = append(c.Queues, q)
		size += len(q) + 3
	}
	return c
}

func BenchmarkBucketEncode(b *testing.B) {
	bd := benchBucket()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bd.encode(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBucketDecode is a member's read of a bucket (ConfigWatch) and
// a writer's.
func BenchmarkBucketDecode(b *testing.B) {
	data, _ := benchBucket().encode()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeBucket("/b", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRegistryBucketRead is the rebalance leader's read of a bucket
// (registryWatch.refresh): decoded, then packed.
func BenchmarkRegistryBucketRead(b *testing.B) {
	data, _ := benchBucket().encode()
	tags := map[string][]string{}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		bd, err := decodeBucket("/b", data)
		if err != nil {
			b.Fatal(err)
		}
		bd.pack(tags)
	}
}

func BenchmarkShareChunkEncode(b *testing.B) {
	c := benchChunk()
	b.ReportAllocs()
	for b.Loop() {
		c.encode()
	}
}

func BenchmarkShareChunkDecode(b *testing.B) {
	data := benchChunk().encode()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeShareChunk(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRegistryHas is the registrar's question, per created or retired
// queue, of a registry of 1,024 buckets of 100 queues.
func BenchmarkRegistryHas(b *testing.B) {
	reg := Registry{}
	per := map[string]*bucketData{}
	var qs []string
	for i := range 102_400 {
		q := fmt.Sprintf("cust-%08d", i)
		qs = append(qs, q)
		bn := registryBucket(q)
		if per[bn] == nil {
			per[bn] = &bucketData{}
		}
		per[bn].Queues = append(per[bn].Queues, q)
	}
	for bn := range per {
		reg.names = append(reg.names, bn)
	}
	slices.Sort(reg.names)
	for _, bn := range reg.names {
		reg.buckets = append(reg.buckets, per[bn].pack(map[string][]string{}))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if !reg.Has(qs[i%len(qs)]) {
			b.Fatal("want every queue listed")
		}
		i += 7919
	}
}
