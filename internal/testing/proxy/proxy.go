// Package proxy is the one TCP proxy of the tests, the benchmarks and the
// chaos harness. It forwards every byte unchanged; Cut, Blackhole and
// Restore inject network faults (the chaos harness cuts workers off
// ZooKeeper and Redis with it, internal/testing/testenv wraps it for partition
// tests), and with CountZooKeeper it counts a ZooKeeper client's requests
// by kind (zookeeper.go, counts.go: the scale section of bench/ puts one in
// front of every member session, the fleet runtime benchmark
// tools/fleetbench in front of every worker).
package proxy

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Proxy is a TCP proxy between clients and one server. Point the clients
// at Addr. Cut and Blackhole start a partition; Restore ends it.
type Proxy struct {
	Addr   string
	target string // under mu: Retarget changes it
	ln     net.Listener
	// zk, when set, makes the proxy read the streams as ZooKeeper frames
	// and count them; readPrefix and pending as in CountReadsUnder.
	zk         bool
	readPrefix string
	pending    sync.Map // xid → struct{}: a getData under readPrefix awaiting its reply
	counts     counters

	mode  atomic.Int32 // a proxyMode
	mu    sync.Mutex
	conns map[*proxyConn]struct{}
	wg    sync.WaitGroup
}

type proxyMode int32

const (
	proxyOpen      proxyMode = iota // forward bytes
	proxyCut                        // close every connection, refuse new ones
	proxyBlackhole                  // keep connections, drop every byte
)

type proxyConn struct {
	client, server net.Conn
	target         string // the server's address
}

func (c *proxyConn) close() {
	c.client.Close()
	if c.server != nil {
		c.server.Close()
	}
}

// Option configures a Proxy.
type Option func(*Proxy)

// CountZooKeeper makes the proxy count a ZooKeeper client's requests by
// kind, the operations inside multis, the bytes each way and the largest
// frames (Counts). The streams must be ZooKeeper's.
func CountZooKeeper() Option { return func(p *Proxy) { p.zk = true } }

// CountReadsUnder is CountZooKeeper that also counts the reply bytes of
// getData requests for paths under prefix (for example a fleet's
// /assignment), as Counts.PrefixReadBytes.
func CountReadsUnder(prefix string) Option {
	return func(p *Proxy) { p.zk, p.readPrefix = true, prefix }
}

// New starts a proxy to target on a free loopback port. Close stops it.
func New(target string, opts ...Option) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy to %s: listen: %w", target, err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[*proxyConn]struct{}{}}
	for _, o := range opts {
		o(p)
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Counts reads the counters since the proxy started (zero without
// CountZooKeeper).
func (p *Proxy) Counts() Counts { return p.counts.read() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		switch proxyMode(p.mode.Load()) {
		case proxyCut:
			c.Close()
			continue
		case proxyBlackhole:
			pc := &proxyConn{client: c}
			if p.add(pc) {
				p.wg.Add(1)
				go func() { defer p.wg.Done(); io.Copy(io.Discard, c); p.remove(pc) }()
			}
			continue
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		s, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		pc := &proxyConn{client: c, server: s, target: target}
		if !p.add(pc) {
			continue
		}
		p.wg.Add(2)
		if p.zk {
			go p.forwardRequests(pc, c, s)
			go p.forwardReplies(pc, s, c)
		} else {
			go p.pipe(pc, s, c)
			go p.pipe(pc, c, s)
		}
	}
}

// open reports whether bytes are forwarded now.
func (p *Proxy) open() bool { return proxyMode(p.mode.Load()) == proxyOpen }

// pipe copies src to dst while the proxy is open; in blackhole mode it reads
// and drops.
func (p *Proxy) pipe(pc *proxyConn, dst, src net.Conn) {
	defer p.wg.Done()
	defer p.remove(pc)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && p.open() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// add registers pc; it reports false, having closed pc, when the proxy was
// cut meanwhile.
func (p *Proxy) add(pc *proxyConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if proxyMode(p.mode.Load()) == proxyCut || (pc.server != nil && pc.target != p.target) { // cut, or retargeted since the dial
		pc.close()
		return false
	}
	p.conns[pc] = struct{}{}
	return true
}

func (p *Proxy) remove(pc *proxyConn) {
	p.mu.Lock()
	if _, ok := p.conns[pc]; ok {
		delete(p.conns, pc)
		pc.close()
	}
	p.mu.Unlock()
}

func (p *Proxy) closeAll() {
	for pc := range p.conns {
		pc.close()
		delete(p.conns, pc)
	}
}

// Cut closes every connection through the proxy and refuses new ones until
// Restore: the client sees connection resets at once, and to the server the
// client has crashed (its session expires).
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.mode.Store(int32(proxyCut))
	p.closeAll()
	p.mu.Unlock()
}

// Blackhole keeps connections open but drops every byte in both directions,
// and holds new connections without reaching the server: the client sees
// silence, as behind a dead network link.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	p.mode.Store(int32(proxyBlackhole))
	p.mu.Unlock()
}

// Restore ends a partition. Connections held by a blackhole are closed so
// that the client reconnects.
func (p *Proxy) Restore() {
	p.mu.Lock()
	if proxyMode(p.mode.Load()) == proxyBlackhole {
		p.closeAll()
	}
	p.mode.Store(int32(proxyOpen))
	p.mu.Unlock()
}

// Retarget points the proxy at another server and closes every connection
// to the old one, as a proxy in front of a Sentinel deployment does when
// the master changes: the clients reconnect, to target. A partition in
// force stays in force.
func (p *Proxy) Retarget(target string) {
	p.mu.Lock()
	p.target = target
	p.closeAll()
	p.mu.Unlock()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	p.closeAll()
	p.mu.Unlock()
	p.wg.Wait()
}
