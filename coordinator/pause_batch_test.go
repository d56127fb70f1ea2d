package coordinator

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// pauseWriteCounter counts the writes sent on a real connection.
type pauseWriteCounter struct {
	zkConn
	multis, creates, sets atomic.Int64
}

func (c *pauseWriteCounter) Multi(ops ...any) ([]zk.MultiResponse, error) {
	c.multis.Add(1)
	return c.zkConn.Multi(ops...)
}

func (c *pauseWriteCounter) Create(p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	c.creates.Add(1)
	return c.zkConn.Create(p, data, flags, acl)
}

func (c *pauseWriteCounter) Set(p string, data []byte, version int32) (*zk.Stat, error) {
	c.sets.Add(1)
	return c.zkConn.Set(p, data, version)
}

// TestSetQueuePausesInBatches pauses 2,500 queues (three multis), one of
// them paused already by someone else (overwritten), reads them back, and
// clears them again.
func TestSetQueuePausesInBatches(t *testing.T) {
	var cc *pauseWriteCounter
	s := connectWrapped(t, testenv.ZooKeeper(t).Addrs, testenv.Chroot(t), testTimeout, func(conn zkConn, cfg Config) zkConn {
		cc = &pauseWriteCounter{zkConn: conn}
		return cc
	})
	ctx := ctxT(t)
	var names []string
	for i := range 2500 {
		names = append(names, fmt.Sprintf("bulk-%04d", i))
	}
	if err := s.Pauses().Set(ctx, drover.PauseQueue, "bulk-0007", drover.Pause{By: "earlier"}); err != nil {
		t.Fatal(err)
	}
	p := drover.Pause{By: "op", Reason: "bulk", At: time.Unix(1, 0).UTC()}
	m0, c0, s0 := cc.multis.Load(), cc.creates.Load(), cc.sets.Load()
	n, err := s.Pauses().SetQueues(ctx, names, p)
	if err != nil || n != len(names) {
		t.Fatalf("SetQueuePauses: want %d written, have %d, %v", len(names), n, err)
	}
	if m, c, st := cc.multis.Load()-m0, cc.creates.Load()-c0, cc.sets.Load()-s0; m != 3 || c != 0 || st != 0 {
		t.Fatalf("SetQueuePauses of 2,500 flags: want 3 multis and no single write, have %d multis, %d creates, %d sets", m, c, st)
	}
	ps, err := s.Pauses().Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Queues) != len(names) {
		t.Fatalf("want %d queue pause flags, have %d", len(names), len(ps.Queues))
	}
	if f := ps.Queues["bulk-0007"]; f.By != "op" || f.Reason != "bulk" {
		t.Fatalf("the flag set before: want overwritten by op/bulk, have %+v", f)
	}
	n, err = s.Pauses().ClearQueues(ctx, append(names[:1000:1000], "never-paused"))
	if err != nil || n != 1000 {
		t.Fatalf("ClearQueuePauses: want 1000 removed, have %d, %v", n, err)
	}
	if ps, err = s.Pauses().Read(ctx); err != nil || len(ps.Queues) != 1500 {
		t.Fatalf("after clearing 1000: want 1500 flags left, have %d, %v", len(ps.Queues), err)
	}
	if _, ok := ps.Queues["bulk-0999"]; ok {
		t.Fatal("bulk-0999 is still paused after the clear")
	}
}
