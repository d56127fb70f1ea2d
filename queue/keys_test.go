package queue

import (
	"fmt"
	"slices"
	"testing"
)

func cachedKeys(k *keyspace) int {
	n := 0
	k.cache.Range(func(any, any) bool { n++; return true })
	return n
}

// The keyspace keeps the names of at most maxCachedQueueKeys queues: a
// worker owning tens of thousands of idle queues does not hold their names
// for good. Names stay right across a clear.
func TestKeyspaceCacheIsBounded(t *testing.T) {
	k := &keyspace{prefix: "p"}
	first := k.queue("q0")
	if k.queue("q0") != first {
		t.Fatal("a queue's keys are rebuilt while the cache has room")
	}
	for i := 1; i < 3*maxCachedQueueKeys; i++ {
		k.queue(fmt.Sprintf("q%d", i))
		if n := cachedKeys(k); n > maxCachedQueueKeys {
			t.Fatalf("after %d queues the cache holds %d, more than %d", i+1, n, maxCachedQueueKeys)
		}
	}
	again := k.queue("q0")
	if again.log != "p:{q0}:log" || again.seq != "p:{q0}:seq" || again.done != "p:{q0}:done" {
		t.Fatalf("keys after clears: %+v", again)
	}
}

// seq builds the same name as the cached keys and leaves the cache alone.
func TestKeyspaceSeqIsNotCached(t *testing.T) {
	k := &keyspace{prefix: "p"}
	if got := k.seq("q1"); got != "p:{q1}:seq" {
		t.Fatalf("seq: have %q", got)
	}
	if n := cachedKeys(k); n != 0 {
		t.Fatalf("seq cached %d queues", n)
	}
	if k.seq("q1") != k.queue("q1").seq {
		t.Fatal("seq and queue(q).seq differ")
	}
}

// A queue's keys are built in three allocations (one string sliced into
// every key, the struct, enqueue-one's key list), not one per key: the
// sparse fleet's workers build them at about the rate of their messages
// (more queues with work than the cache holds). Each key is still the
// queue's own name for it.
func TestQueueKeysAreBuiltInThreeAllocations(t *testing.T) {
	k := &keyspace{prefix: "drover"}
	qk := k.build("emails:customer-42")
	got := []string{qk.log, qk.msg, qk.seq, qk.delayed, qk.dead, qk.deadmsg, qk.seen, qk.owner, qk.done, qk.attempts, qk.family}
	for i, suffix := range queueKeySuffixes {
		if want := "drover:{emails:customer-42}:" + suffix; got[i] != want {
			t.Errorf("key %q: have %q, want %q", suffix, got[i], want)
		}
	}
	if want := []string{qk.log, qk.msg, qk.seq, qk.owner}; !slices.Equal(qk.enqueueOne, want) {
		t.Errorf("enqueueOne: have %q, want %q", qk.enqueueOne, want)
	}
	if n := testing.AllocsPerRun(100, func() { k.build("emails:customer-42") }); n > 3 {
		t.Fatalf("building a queue's keys: %.0f allocations, want at most 3", n)
	}
}

// BenchmarkQueueKeysMiss builds the keys of queues the cache does not hold:
// what a worker with more queues at work than maxCachedQueueKeys (the
// sparse fleet's) does at about the rate of its messages.
func BenchmarkQueueKeysMiss(b *testing.B) {
	names := make([]string, 4*maxCachedQueueKeys)
	for i := range names {
		names[i] = fmt.Sprintf("c-key-%06d", i)
	}
	k := &keyspace{prefix: "drover"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k.queue(names[i%len(names)])
	}
}
