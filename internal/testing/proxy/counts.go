package proxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
)

// Counts are a proxy's counters since it started; Sub of two readings
// gives a window's, Add sums proxies.
type Counts struct {
	Writes   int64 // write requests: create, delete, setData, setACL, multi, reconfig
	Reads    int64 // getData, exists, getChildren, getACL, sync, multiRead, …
	Pings    int64
	Other    int64 // connect, auth, setWatches, close, …
	WriteOps int64 // single writes plus the writes inside multis
	CheckOps int64 // version checks inside multis
	ReadOps  int64 // single reads plus the reads inside multiReads (nodes read)
	BytesOut int64 // client-to-server bytes
	BytesIn  int64 // server-to-client bytes
	// PrefixReadBytes are the bytes of replies to getData requests under
	// the CountReadsUnder prefix.
	PrefixReadBytes int64
	// MaxRequest and MaxResponse are the largest frames so far (maxima:
	// Add and Sub keep the larger, not a sum or a difference).
	MaxRequest, MaxResponse int64
	// ByOp counts requests by operation code (codes ≥ 128 and frames too
	// short for a header under −1), for telling what a client does.
	ByOp map[int32]int64
}

// Requests is every request but pings.
func (c Counts) Requests() int64 { return c.Reads + c.Writes + c.Other }

// Sub returns c − earlier (the maxima stay c's).
func (c Counts) Sub(earlier Counts) Counts {
	out := Counts{
		Writes: c.Writes - earlier.Writes, Reads: c.Reads - earlier.Reads, Pings: c.Pings - earlier.Pings,
		Other: c.Other - earlier.Other, WriteOps: c.WriteOps - earlier.WriteOps, CheckOps: c.CheckOps - earlier.CheckOps,
		ReadOps:  c.ReadOps - earlier.ReadOps,
		BytesOut: c.BytesOut - earlier.BytesOut, BytesIn: c.BytesIn - earlier.BytesIn,
		PrefixReadBytes: c.PrefixReadBytes - earlier.PrefixReadBytes,
		MaxRequest:      c.MaxRequest, MaxResponse: c.MaxResponse,
		ByOp: map[int32]int64{},
	}
	for op, n := range c.ByOp {
		if d := n - earlier.ByOp[op]; d != 0 {
			out.ByOp[op] = d
		}
	}
	return out
}

// Add returns c + o (the maxima: the larger).
func (c Counts) Add(o Counts) Counts {
	out := Counts{
		Writes: c.Writes + o.Writes, Reads: c.Reads + o.Reads, Pings: c.Pings + o.Pings,
		Other: c.Other + o.Other, WriteOps: c.WriteOps + o.WriteOps, CheckOps: c.CheckOps + o.CheckOps,
		ReadOps:  c.ReadOps + o.ReadOps,
		BytesOut: c.BytesOut + o.BytesOut, BytesIn: c.BytesIn + o.BytesIn,
		PrefixReadBytes: c.PrefixReadBytes + o.PrefixReadBytes,
		MaxRequest:      max(c.MaxRequest, o.MaxRequest), MaxResponse: max(c.MaxResponse, o.MaxResponse),
		ByOp: map[int32]int64{},
	}
	for op, n := range c.ByOp {
		out.ByOp[op] += n
	}
	for op, n := range o.ByOp {
		out.ByOp[op] += n
	}
	return out
}

// counters are Counts updated atomically.
type counters struct {
	writes, reads, pings, other, writeOps, checkOps, readOps atomic.Int64
	bytesOut, bytesIn, prefixReadBytes                       atomic.Int64
	maxRequest, maxResponse                                  atomic.Int64
	byOp                                                     [129]atomic.Int64 // [128]: not a known code
}

func (c *counters) read() Counts {
	return Counts{
		Writes: c.writes.Load(), Reads: c.reads.Load(), Pings: c.pings.Load(), Other: c.other.Load(),
		WriteOps: c.writeOps.Load(), CheckOps: c.checkOps.Load(), ReadOps: c.readOps.Load(),
		BytesOut: c.bytesOut.Load(), BytesIn: c.bytesIn.Load(), PrefixReadBytes: c.prefixReadBytes.Load(),
		MaxRequest: c.maxRequest.Load(), MaxResponse: c.maxResponse.Load(),
		ByOp: c.ops(),
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
	case op == opCheck: // a check alone (go-zookeeper sends them in multis) takes the write path
		c.writes.Add(1)
		c.checkOps.Add(1)
	case isWrite(op):
		c.writes.Add(1)
		c.writeOps.Add(1)
	case op == opMultiRead:
		c.reads.Add(1)
		n, err := multiReadOps(frame[8:])
		if err != nil {
			n = 1 // undecodable: at least the request itself
		}
		c.readOps.Add(int64(n))
	case isRead(op):
		c.reads.Add(1)
		c.readOps.Add(1)
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

// multiReadOps counts the reads in a multiRead request's body: headers as
// a multi's, each followed by a getData or getChildren record (path,
// watch).
func multiReadOps(b []byte) (int, error) {
	d := decoder{b: b}
	n := 0
	for {
		typ := d.int32()
		done := d.byte()
		d.int32() // err
		if d.err != nil {
			return n, d.err
		}
		if done != 0 || typ == -1 {
			return n, nil
		}
		switch typ {
		case opGetData, opGetChildren:
			d.bytes() // path
			d.byte()  // watch
			n++
		default:
			return n, errors.New("multiRead: unknown operation")
		}
		if d.err != nil {
			return n, d.err
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
