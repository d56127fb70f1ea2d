package proxy_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/proxy"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

func TestProxyForwardsAndCountsASession(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	p, err := proxy.New(zk.Addrs[0], proxy.CountReadsUnder(root+"/queues"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: []string{p.Addr}, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p.Counts().Other < 1 {
		t.Fatalf("the connect request was not seen: %+v", p.Counts())
	}
	before := p.Counts()
	if err := s.Queues().Create(ctx, drover.QueueConfig{Name: "counted"}); err != nil {
		t.Fatal(err)
	}
	created := p.Counts().Sub(before)
	if created.Writes < 1 || created.WriteOps < 1 {
		t.Fatalf("creating a queue: want ≥ 1 write request, have %+v", created)
	}
	before = p.Counts()
	e, err := s.Queues().Get(ctx, "counted")
	if err != nil {
		t.Fatalf("reading the queue back through the proxy: %v", err)
	}
	if e.Config.Name != "counted" {
		t.Fatalf("read back: want queue counted, have %+v", e.Config)
	}
	read := p.Counts().Sub(before)
	if read.Writes != 0 || read.Reads < 1 {
		t.Fatalf("reading a queue: want reads and no writes, have %+v", read)
	}
	if read.BytesIn <= 0 || read.PrefixReadBytes <= 0 || read.PrefixReadBytes > read.BytesIn {
		t.Fatalf("reading a queue under the counted prefix: want 0 < prefix-read bytes ≤ bytes in, have %+v", read)
	}
	if c := p.Counts(); c.MaxRequest <= 0 || c.MaxResponse <= 0 {
		t.Fatalf("want the largest frames each way, have %+v", c)
	}

	// Cut: the session's connection ends and no new one gets through, so
	// the client cannot reach the server any more.
	p.Cut()
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
	defer ccancel()
	if _, err := s.Queues().Get(cctx, "counted"); err == nil {
		t.Fatal("a read through a cut proxy succeeded")
	}
	if c, err := net.Dial("tcp", p.Addr); err == nil {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var b [1]byte
		if _, err := c.Read(b[:]); err == nil {
			t.Fatal("a connection through a cut proxy stayed open")
		}
		c.Close()
	}
}
