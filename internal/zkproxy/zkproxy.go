// Package zkproxy is a counting TCP proxy between ZooKeeper clients and a
// server, for benchmarks: it forwards every byte unchanged and counts the
// requests by kind (exactly, from the client-to-server stream: ZooKeeper
// frames are length-prefixed, and after a connection's connect request each
// frame starts with an xid and the operation code), the operations inside
// multis, the bytes each way, the largest frames, and optionally the bytes
// of replies to reads under a path prefix. Cut simulates a crash of the
// client: every connection is closed and new ones are refused, so its
// session expires on the server.
//
// The scale section of bench/ puts one in front of every member session,
// the fleet runtime benchmark (internal/fleetbench) in front of every
// worker.
package zkproxy

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
)

// Proxy forwards the connections made to Addr to one ZooKeeper server.
type Proxy struct {
	ln     net.Listener
	target string
	// readPrefix, when set, makes the proxy count the bytes of replies to
	// getData requests of paths under it (Counts.PrefixReadBytes).
	readPrefix string
	pending    sync.Map // xid → struct{}: a getData under readPrefix awaiting its reply

	mu    sync.Mutex
	conns []net.Conn
	cut   bool

	counts counters
}

// Option configures a Proxy.
type Option func(*Proxy)

// CountReadsUnder makes the proxy count the reply bytes of getData requests
// for paths under prefix (for example a fleet's /assignment), as
// Counts.PrefixReadBytes.
func CountReadsUnder(prefix string) Option { return func(p *Proxy) { p.readPrefix = prefix } }

// New listens on a free loopback port and forwards every connection to
// target. Close it when done.
func New(target string, opts ...Option) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target}
	for _, o := range opts {
		o(p)
	}
	go p.accept()
	return p, nil
}

// Addr is the address a client should use instead of the server's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Counts reads the counters since the proxy started.
func (p *Proxy) Counts() Counts { return p.counts.read() }

// Cut closes every connection and refuses new ones: to the server, the
// client has crashed.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Cut()
}

func (p *Proxy) accept() {
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
		if p.cut {
			p.mu.Unlock()
			c.Close()
			up.Close()
			continue
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() {
			p.forwardReplies(up, c)
			c.Close()
		}()
		go func() {
			p.forwardRequests(c, up)
			up.Close()
		}()
	}
}

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

// forwardRequests copies the client's frames to up, counting each.
func (p *Proxy) forwardRequests(client, up net.Conn) {
	w := bufio.NewWriterSize(up, 64<<10)
	first := true
	frames(client, func(hdr, frame []byte) error {
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

// forwardReplies copies the server's frames to the client, counting their
// bytes, the largest, and those answering reads under the prefix.
func (p *Proxy) forwardReplies(up, client net.Conn) {
	w := bufio.NewWriterSize(client, 64<<10)
	frames(up, func(hdr, frame []byte) error {
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
