package proxy

// Counting a ZooKeeper client's requests: exactly, from the
// client-to-server stream. ZooKeeper frames are length-prefixed, and after
// a connection's connect request each frame starts with an xid and the
// operation code.

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync/atomic"
)

// maxFrame bounds a frame the proxy buffers (ZooKeeper's own default
// jute.maxbuffer is 1 MB; a client sending more is refused by the server).
const maxFrame = 16 << 20

// frames reads length-prefixed frames from r and calls f with each (the
// length header and the frame, which is reused by the next call), and
// flush whenever r has nothing more buffered, until r, f or flush fails.
func frames(r io.Reader, f func(hdr, frame []byte) error, flush func() error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var hdr [4]byte
	var frame []byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
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
		if _, err := io.ReadFull(br, frame); err != nil {
			return
		}
		if err := f(hdr[:], frame); err != nil {
			return
		}
		if br.Buffered() == 0 {
			if err := flush(); err != nil {
				return
			}
		}
	}
}

// forwardRequests copies the client's frames to up while the proxy is
// open, counting each (in blackhole mode it reads and drops).
func (p *Proxy) forwardRequests(pc *proxyConn, client, up net.Conn) {
	defer p.wg.Done()
	defer p.remove(pc)
	w := bufio.NewWriterSize(up, 64<<10)
	first := true
	frames(client, func(hdr, frame []byte) error {
		if !p.open() {
			return nil
		}
		p.counts.bytesOut.Add(int64(4 + len(frame)))
		storeMax(&p.counts.maxRequest, int64(len(frame)))
		if first {
			p.counts.other.Add(1) // the connect request has no header
			first = false
		} else {
			p.counts.classify(frame)
			p.notePrefixRead(frame)
		}
		w.Write(hdr)
		_, err := w.Write(frame)
		return err
	}, w.Flush)
}

// forwardReplies copies the server's frames to the client while the proxy
// is open, counting their bytes, the largest, and those answering reads
// under the prefix.
func (p *Proxy) forwardReplies(pc *proxyConn, up, client net.Conn) {
	defer p.wg.Done()
	defer p.remove(pc)
	w := bufio.NewWriterSize(client, 64<<10)
	frames(up, func(hdr, frame []byte) error {
		if !p.open() {
			return nil
		}
		p.counts.bytesIn.Add(int64(4 + len(frame)))
		storeMax(&p.counts.maxResponse, int64(len(frame)))
		if p.readPrefix != "" && len(frame) >= 4 {
			if _, ok := p.pending.LoadAndDelete(int32(binary.BigEndian.Uint32(frame[0:4]))); ok {
				p.counts.prefixReadBytes.Add(int64(4 + len(frame)))
			}
		}
		w.Write(hdr)
		_, err := w.Write(frame)
		return err
	}, w.Flush)
}

// notePrefixRead remembers the xid of a getData of a path under the prefix.
func (p *Proxy) notePrefixRead(frame []byte) {
	if p.readPrefix == "" || len(frame) < 12 || int32(binary.BigEndian.Uint32(frame[4:8])) != opGetData {
		return
	}
	if l := int(binary.BigEndian.Uint32(frame[8:12])); l >= 0 && 12+l <= len(frame) {
		if strings.HasPrefix(string(frame[12:12+l]), p.readPrefix) {
			p.pending.Store(int32(binary.BigEndian.Uint32(frame[0:4])), struct{}{})
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
