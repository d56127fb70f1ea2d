package queue

import (
	"context"
	_ "embed"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/testing/testenv"
)

// enqueueV2 is the enqueue script of layout v2 as docs/redis-schema.md
// printed it before v3, byte for byte: what a producer in another language
// that copied it still runs.
//
//go:embed testdata/enqueue_v2.lua
var enqueueV2 string

// A producer of the previous layout version keeps working at full speed
// (docs/redis-schema.md, "Compatibility"): the v2 script, run against a
// queue whose owner routed its wake-ups as today's workers do, puts the
// message where the owner reads and wakes the owner at once, not after the
// backstop check.
func TestAnEnqueueV2ProducerWakesTodaysOwner(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb, err := NewClient(ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer rdb.Close()
	s := newTestStore(t, rdb, nil)
	wake, err := s.Listener().Wakeups(ctx, "m1")
	if err != nil {
		t.Fatalf("Wakeups: %v", err)
	}
	if err := s.Log().RouteWakeups(ctx, "m1", "legacy"); err != nil {
		t.Fatalf("RouteWakeups: %v", err)
	}
	k := s.keys.queue("legacy")
	env := `{"id":"v2-1","queue":"legacy","task":"t","args":{},"attempt":0,"enqueued_at":"2025-01-01T12:00:00Z"}`
	res, err := rdb.Eval(ctx, enqueueV2, []string{k.log, k.msg, k.seq, k.delayed, k.seen, k.owner},
		86400000, "1", "legacy", "v2-1", env, 0, 1).Slice()
	if err != nil {
		t.Fatalf("the v2 script against today's layout: %v", err)
	}
	if len(res) != 1 || res[0].(int64) <= 0 {
		t.Fatalf("want one position > 0, have %v", res)
	}
	select {
	case w := <-wake:
		if w.Queue != "legacy" {
			t.Fatalf("want a wake-up of legacy, have %+v", w)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the v2 producer's enqueue woke no one within 30 s")
	}
	got, err := s.Log().ReadAfter(ctx, "legacy", 0, 10)
	if err != nil || len(got) != 1 || got[0].ID != "v2-1" {
		t.Fatalf("want v2-1 read back after offset 0, have %+v (%v)", got, err)
	}
}
