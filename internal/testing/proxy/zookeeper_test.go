package proxy

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// jute writes ZooKeeper request records for the classifier tests.
type jute []byte

func (j jute) i32(v int32) jute { return binary.BigEndian.AppendUint32(j, uint32(v)) }
func (j jute) str(s string) jute {
	return append(j.i32(int32(len(s))), s...)
}
func (j jute) header(op int32, done bool) jute {
	j = j.i32(op)
	if done {
		j = append(j, 1)
	} else {
		j = append(j, 0)
	}
	return j.i32(-1)
}

func TestMultiCountsItsOperations(t *testing.T) {
	body := jute{}.
		header(opCheck, false).str("/owners/a").i32(3).
		header(opSetData, false).str("/offsets/a").str(`{"position":1}`).i32(7).
		header(opCreate, false).str("/owners/b").str("{}").i32(1).i32(31).str("world").str("anyone").i32(1).
		header(opDelete, false).str("/owners/c").i32(0).
		header(opCheck, false).str("/owners/d").i32(2).
		header(-1, true)
	frame := jute{}.i32(42).i32(opMulti)
	frame = append(frame, body...)
	var c counters
	c.classify(frame)
	have := c.read()
	want := Counts{Writes: 1, WriteOps: 3, CheckOps: 2, ByOp: map[int32]int64{opMulti: 1}}
	if !reflect.DeepEqual(have, want) {
		t.Fatalf("want %+v, have %+v", want, have)
	}
}

func TestMultiReadCountsItsReads(t *testing.T) {
	body := jute{}.
		header(opGetData, false).str("/offsets/a").append(0).
		header(opGetData, false).str("/owners/a").append(0).
		header(opGetChildren, false).str("/queues").append(0).
		header(-1, true)
	frame := jute{}.i32(42).i32(opMultiRead)
	frame = append(frame, body...)
	var c counters
	c.classify(frame)
	want := Counts{Reads: 1, ReadOps: 3, ByOp: map[int32]int64{opMultiRead: 1}}
	if have := c.read(); !reflect.DeepEqual(have, want) {
		t.Fatalf("want %+v, have %+v", want, have)
	}
	if OpName(opMultiRead) != "multiRead" {
		t.Fatalf("opcode 22: want multiRead, have %s", OpName(opMultiRead))
	}
}

func TestRequestsAreCountedByKind(t *testing.T) {
	var c counters
	c.classify(jute{}.i32(-2).i32(opPing))
	c.classify(jute{}.i32(1).i32(opGetData).str("/x").append(0))
	c.classify(jute{}.i32(2).i32(opSetData).str("/x").str("v").i32(-1))
	c.classify(jute{}.i32(3).i32(opCreate2).str("/y").str("").i32(0).i32(0))
	c.classify(jute{}.i32(-8).i32(101)) // setWatches
	c.classify(jute{}.i32(4).i32(opMulti).append(0xff))
	want := Counts{Writes: 3, Reads: 1, Pings: 1, Other: 1, WriteOps: 3, ReadOps: 1,
		ByOp: map[int32]int64{opPing: 1, opGetData: 1, opSetData: 1, opCreate2: 1, 101: 1, opMulti: 1}}
	if have := c.read(); !reflect.DeepEqual(have, want) {
		t.Fatalf("want %+v, have %+v", want, have)
	}
}

func (j jute) append(b ...byte) jute { return append(j, b...) }

func TestCountsAddKeepsTheMaximaAndSumsTheRest(t *testing.T) {
	a := Counts{Reads: 2, Writes: 1, BytesIn: 10, MaxRequest: 5, MaxResponse: 50, ByOp: map[int32]int64{opGetData: 2}}
	b := Counts{Reads: 1, Pings: 3, BytesIn: 5, MaxRequest: 9, MaxResponse: 20, ByOp: map[int32]int64{opGetData: 1, opMulti: 1}}
	want := Counts{Reads: 3, Writes: 1, Pings: 3, BytesIn: 15, MaxRequest: 9, MaxResponse: 50, ByOp: map[int32]int64{opGetData: 3, opMulti: 1}}
	if have := a.Add(b); !reflect.DeepEqual(have, want) {
		t.Fatalf("want %+v, have %+v", want, have)
	}
	if have := a.Add(b).Sub(a); have.Reads != 1 || have.Pings != 3 || have.MaxResponse != 50 || have.ByOp[opGetData] != 1 || have.Requests() != 1 {
		t.Fatalf("Sub: have %+v", have)
	}
}
