package fleetbench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// ZKProxy is a TCP proxy between one ZooKeeper client (a worker) and the
// server that counts the client's requests by kind, exactly, from the
// client-to-server byte stream: ZooKeeper frames are length-prefixed, and
// after a connection's connect request each frame starts with an xid and
// the operation code. A multi is one request; the operations inside it are
// counted as well (WriteOps, CheckOps).
type ZKProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns []net.Conn
	done  bool

	counts counters
}

// ZKCounts are a proxy's counters since it started; Sub of two readings
// gives a window's.
type ZKCounts struct {
	Writes   int64 // write requests: create, delete, setData, setACL, multi, reconfig
	Reads    int64 // getData, exists, getChildren, getACL, sync, multiRead, …
	Pings    int64
	Other    int64 // connect, auth, setWatches, close, …
	WriteOps int64 // single writes plus the writes inside multis
	CheckOps int64 // version checks inside multis
	Bytes    int64 // client-to-server bytes
	// ByOp counts requests by operation code (codes ≥ 128 and frames too
	// short for a header under 0), for telling what a member does.
	ByOp map[int32]int64
}

// Sub returns c − earlier.
func (c ZKCounts) Sub(earlier ZKCounts) ZKCounts {
	return ZKCounts{
		Writes: c.Writes - earlier.Writes, Reads: c.Reads - earlier.Reads, Pings: c.Pings - earlier.Pings,
		Other: c.Other - earlier.Other, WriteOps: c.WriteOps - earlier.WriteOps, CheckOps: c.CheckOps - earlier.CheckOps,
		Bytes: c.Bytes - earlier.Bytes, ByOp: subOps(c.ByOp, earlier.ByOp),
	}
}

func subOps(a, b map[int32]int64) map[int32]int64 {
	out := map[int32]int64{}
	for op, n := range a {
		if d := n - b[op]; d != 0 {
			out[op] = d
		}
	}
	return out
}

// counters are ZKCounts updated atomically.
type counters struct {
	writes, reads, pings, other, writeOps, checkOps, bytes atomic.Int64
	byOp                                                   [129]atomic.Int64 // [128]: not a known code
}

// ZooKeeper operation codes (org.apache.zookeeper.ZooDefs.OpCode).
const (
	opCreate          = 1
	opDelete          = 2
	opExists          = 3
	opGetData         = 4
	opSetData         = 5
	opGetACL          = 6
	opSetACL          = 7
	opGetChildren     = 8
	opSync            = 9
	opPing            = 11
	opGetChildren2    = 12
	opCheck           = 13
	opMulti           = 14
	opCreate2         = 15
	opReconfig        = 16
	opCreateContainer = 19
	opDeleteContainer = 20
	opCreateTTL       = 21
	opMultiRead       = 22
	opGetEphemerals   = 103
	opGetAllChildren  = 104
	opAddWatch        = 106
)

// OpName names an operation code for a log line.
func OpName(op int32) string {
	names := map[int32]string{
		opCreate: "create", opDelete: "delete", opExists: "exists", opGetData: "getData", opSetData: "setData",
		opGetACL: "getACL", opSetACL: "setACL", opGetChildren: "getChildren", opSync: "sync", opPing: "ping",
		opGetChildren2: "getChildren2", opCheck: "check", opMulti: "multi", opCreate2: "create2",
		opReconfig: "reconfig", opCreateContainer: "createContainer", opDeleteContainer: "deleteContainer",
		opCreateTTL: "createTTL", opMultiRead: "multiRead", opGetEphemerals: "getEphemerals",
		opGetAllChildren: "getAllChildren", opAddWatch: "addWatch", 100: "auth", 101: "setWatches", -11: "close",
	}
	if n, ok := names[op]; ok {
		return n
	}
	return fmt.Sprintf("op%d", op)
}

func isWrite(op int32) bool {
	switch op {
	case opCreate, opDelete, opSetData, opSetACL, opCreate2, opReconfig, opCreateContainer, opDeleteContainer, opCreateTTL:
		return true
	}
	return false
}

func isRead(op int32) bool {
	switch op {
	case opExists, opGetData, opGetACL, opGetChildren, opSync, opGetChildren2, opMultiRead, opGetEphemerals, opGetAllChildren:
		return true
	}
	return false
}

// NewZKProxy listens on a free loopback port and forwards every connection
// to target. Close it when done.
func NewZKProxy(target string) (*ZKProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &ZKProxy{ln: ln, target: target}
	go p.accept()
	return p, nil
}

// Addr is the address a client should use instead of the server's.
func (p *ZKProxy) Addr() string { return p.ln.Addr().String() }

// Counts reads the counters.
func (p *ZKProxy) Counts() ZKCounts { return p.counts.read() }

func (p *ZKProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.done {
			p.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() {
			io.Copy(c, up)
			c.Close()
		}()
		go func() {
			p.count(c, up)
			up.Close()
		}()
	}
}

// Close stops listening and closes every connection.
func (p *ZKProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	for _, c := range p.conns {
		c.Close()
	}
}

func (c *counters) read() ZKCounts {
	return ZKCounts{
		Writes: c.writes.Load(), Reads: c.reads.Load(), Pings: c.pings.Load(), Other: c.other.Load(),
		WriteOps: c.writeOps.Load(), CheckOps: c.checkOps.Load(), Bytes: c.bytes.Load(), ByOp: c.ops(),
	}
}

func (c *counters) ops() map[int32]int64 {
	out := map[int32]int64{}
	for i := range c.byOp {
		if n := c.byOp[i].Load(); n != 0 {
			op := int32(i)
			if i == len(c.byOp)-1 {
				op = -1
			}
			out[op] = n
		}
	}
	return out
}

// maxFrame bounds a frame the proxy buffers (ZooKeeper's own default
// jute.maxbuffer is 1 MB; a client sending more is refused by the server).
const maxFrame = 16 << 20

// count forwards the client's frames to up, counting each. It returns when
// either side closes.
func (p *ZKProxy) count(client, up net.Conn) {
	r := bufio.NewReaderSize(client, 64<<10)
	w := bufio.NewWriterSize(up, 64<<10)
	first := true
	var frame []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[:]))
		if n < 0 || n > maxFrame {
			return
		}
		if cap(frame) < n {
			frame = make([]byte, n)
		}
		frame = frame[:n]
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		p.counts.bytes.Add(int64(4 + n))
		if first {
			p.counts.other.Add(1) // the connect request has no header
			first = false
		} else {
			p.counts.classify(frame)
		}
		w.Write(hdr[:])
		w.Write(frame)
		if r.Buffered() == 0 { // flush when the client has nothing more queued
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// classify counts one request frame (after the length): xid, op code, body.
func (c *counters) classify(frame []byte) {
	if len(frame) < 8 {
		c.other.Add(1)
		c.byOp[len(c.byOp)-1].Add(1)
		return
	}
	op := int32(binary.BigEndian.Uint32(frame[4:8]))
	if op >= 0 && int(op) < len(c.byOp)-1 {
		c.byOp[op].Add(1)
	} else {
		c.byOp[len(c.byOp)-1].Add(1)
	}
	switch {
	case op == opPing:
		c.pings.Add(1)
	case op == opMulti:
		c.writes.Add(1)
		writes, checks, err := multiOps(frame[8:])
		if err != nil {
			writes = 1 // undecodable: at least the request itself
		}
		c.writeOps.Add(int64(writes))
		c.checkOps.Add(int64(checks))
	case isWrite(op):
		c.writes.Add(1)
		c.writeOps.Add(1)
	case isRead(op):
		c.reads.Add(1)
	default:
		c.other.Add(1)
	}
}

var errShort = errors.New("multi: short record")

// multiOps counts the writes and checks in a multi request's body: a
// sequence of (type int32, done bool, err int32) headers, each followed by
// its operation's record, ending with a header whose done is true.
func multiOps(b []byte) (writes, checks int, err error) {
	d := decoder{b: b}
	for {
		typ := d.int32()
		done := d.byte()
		d.int32() // err
		if d.err != nil {
			return writes, checks, d.err
		}
		if done != 0 || typ == -1 {
			return writes, checks, nil
		}
		switch typ {
		case opCreate, opCreate2, opCreateContainer, opCreateTTL:
			d.bytes() // path
			d.bytes() // data
			for n := d.int32(); n > 0 && d.err == nil; n-- {
				d.int32() // perms
				d.bytes() // scheme
				d.bytes() // id
			}
			d.int32() // flags
			if typ == opCreateTTL {
				d.skip(8)
			}
			writes++
		case opDelete, opCheck:
			d.bytes() // path
			d.int32() // version
			if typ == opCheck {
				checks++
			} else {
				writes++
			}
		case opSetData:
			d.bytes() // path
			d.bytes() // data
			d.int32() // version
			writes++
		default:
			return writes, checks, errors.New("multi: unknown operation")
		}
		if d.err != nil {
			return writes, checks, d.err
		}
	}
}

// decoder reads jute's big-endian records; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) skip(n int) []byte {
	if d.err != nil || n < 0 || len(d.b) < n {
		d.err = errShort
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) int32() int32 {
	b := d.skip(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (d *decoder) byte() byte {
	b := d.skip(1)
	if b == nil {
		return 0
	}
	return b[0]
}

// bytes reads a length-prefixed buffer or string (length −1: null).
func (d *decoder) bytes() []byte {
	n := d.int32()
	if n == -1 {
		return nil
	}
	return d.skip(int(n))
}
