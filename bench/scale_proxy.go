package main

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
)

// zkProxy is a TCP proxy between one member and ZooKeeper. It counts the
// member's requests by kind from the client-to-server byte stream (ZooKeeper
// frames are length-prefixed; after the connect request each frame starts
// with xid and the operation code), and Cut simulates a crash: every
// connection is closed and new ones are refused, so the member's session
// expires on the server.
type zkProxy struct {
	ln     net.Listener
	target string
	cut    atomic.Bool

	reads, writes, pings, other atomic.Int64      // requests by kind
	bytesIn                     atomic.Int64      // server-to-client bytes
	assignBytes                 atomic.Int64      // bytes of replies to reads of /assignment nodes
	maxRequest, maxResponse     atomic.Int64      // largest frames seen
	byOp                        [128]atomic.Int64 // requests by operation code (for BENCH_DEBUG_SCALE)

	assignPrefix string   // the path of /assignment under the fleet's root
	xids         sync.Map // xid → true: a read of an /assignment node awaiting its reply

	mu    sync.Mutex
	conns []net.Conn
}

// ZooKeeper operation codes (org.apache.zookeeper.ZooDefs.OpCode).
const (
	opCreate       = 1
	opDelete       = 2
	opExists       = 3
	opGetData      = 4
	opSetData      = 5
	opGetACL       = 6
	opGetChildren  = 8
	opSync         = 9
	opPing         = 11
	opGetChildren2 = 12
	opCheck        = 13
	opMulti        = 14
	opCreate2      = 15
	opSetWatches   = 101
)

func newZKProxy(target, assignPath string) (*zkProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &zkProxy{ln: ln, target: target, assignPrefix: assignPath}
	go p.accept()
	return p, nil
}

func (p *zkProxy) addr() string { return p.ln.Addr().String() }

func (p *zkProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.cut.Load() {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() {
			p.countReplies(up, c)
			c.Close()
		}()
		go func() {
			p.countRequests(c, up)
			up.Close()
		}()
	}
}

// countRequests copies client frames to up, counting them by kind.
func (p *zkProxy) countRequests(c net.Conn, up net.Conn) {
	var hdr [4]byte
	first := true
	buf := make([]byte, 64<<10)
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[:]))
		if n < 0 || n > 64<<20 {
			return
		}
		if n > len(buf) {
			buf = make([]byte, n)
		}
		frame := buf[:n]
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		if !first && n >= 8 {
			op := int32(binary.BigEndian.Uint32(frame[4:8]))
			p.count(op)
			if op == opGetData && p.assignPrefix != "" && n >= 12 {
				if l := int(binary.BigEndian.Uint32(frame[8:12])); l >= 0 && 12+l <= n {
					if path := string(frame[12 : 12+l]); strings.HasPrefix(path, p.assignPrefix) {
						p.xids.Store(int32(binary.BigEndian.Uint32(frame[0:4])), true)
					}
				}
			}
		}
		storeMax(&p.maxRequest, int64(n))
		first = false
		if _, err := up.Write(hdr[:]); err != nil {
			return
		}
		if _, err := up.Write(frame); err != nil {
			return
		}
	}
}

// countReplies copies server frames to c, counting their bytes, the largest,
// and those answering reads of /assignment nodes.
func (p *zkProxy) countReplies(up net.Conn, c net.Conn) {
	var hdr [4]byte
	buf := make([]byte, 64<<10)
	for {
		if _, err := io.ReadFull(up, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[:]))
		if n < 0 || n > 64<<20 {
			return
		}
		if n > len(buf) {
			buf = make([]byte, n)
		}
		frame := buf[:n]
		if _, err := io.ReadFull(up, frame); err != nil {
			return
		}
		p.bytesIn.Add(int64(4 + n))
		storeMax(&p.maxResponse, int64(n))
		if n >= 4 {
			if _, ok := p.xids.LoadAndDelete(int32(binary.BigEndian.Uint32(frame[0:4]))); ok {
				p.assignBytes.Add(int64(4 + n))
			}
		}
		if _, err := c.Write(hdr[:]); err != nil {
			return
		}
		if _, err := c.Write(frame); err != nil {
			return
		}
	}
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

func (p *zkProxy) count(op int32) {
	if op >= 0 && int(op) < len(p.byOp) {
		p.byOp[op].Add(1)
	}
	switch op {
	case opPing:
		p.pings.Add(1)
	case opExists, opGetData, opGetACL, opGetChildren, opGetChildren2, opSync:
		p.reads.Add(1)
	case opCreate, opDelete, opSetData, opCheck, opMulti, opCreate2:
		p.writes.Add(1)
	default:
		p.other.Add(1)
	}
}

// Cut closes every connection and refuses new ones.
func (p *zkProxy) Cut() {
	p.cut.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *zkProxy) close() {
	p.ln.Close()
	p.Cut()
}

// zkCounts is a snapshot of request counters. MaxRequest and MaxResponse
// are the largest frames so far (they are maxima, not summed: add and sub
// keep the larger).
type zkCounts struct {
	Reads, Writes, Other, Pings, BytesIn int64
	AssignBytes                          int64
	MaxRequest, MaxResponse              int64
}

func (p *zkProxy) counts() zkCounts {
	return zkCounts{Reads: p.reads.Load(), Writes: p.writes.Load(), Other: p.other.Load(), Pings: p.pings.Load(), BytesIn: p.bytesIn.Load(),
		AssignBytes: p.assignBytes.Load(), MaxRequest: p.maxRequest.Load(), MaxResponse: p.maxResponse.Load()}
}

func (c zkCounts) add(o zkCounts) zkCounts {
	return zkCounts{c.Reads + o.Reads, c.Writes + o.Writes, c.Other + o.Other, c.Pings + o.Pings, c.BytesIn + o.BytesIn,
		c.AssignBytes + o.AssignBytes, max(c.MaxRequest, o.MaxRequest), max(c.MaxResponse, o.MaxResponse)}
}

func (c zkCounts) sub(o zkCounts) zkCounts {
	return zkCounts{c.Reads - o.Reads, c.Writes - o.Writes, c.Other - o.Other, c.Pings - o.Pings, c.BytesIn - o.BytesIn,
		c.AssignBytes - o.AssignBytes, c.MaxRequest, c.MaxResponse}
}

// Requests is every request but pings.
func (c zkCounts) Requests() int64 { return c.Reads + c.Writes + c.Other }

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}
