// Package proxy is a cuttable TCP proxy for fault injection: the chaos
// harness cuts workers off ZooKeeper with it, and internal/testenv wraps it
// for partition tests.
package proxy

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// Proxy is a TCP proxy between a client and a server, for partition tests.
// Point the client at Addr. Cut and Blackhole start a partition; Restore
// ends it.
type Proxy struct {
	Addr   string
	target string
	ln     net.Listener

	mu    sync.Mutex
	mode  proxyMode
	conns map[*proxyConn]struct{}
	wg    sync.WaitGroup
}

type proxyMode int

const (
	proxyOpen      proxyMode = iota // forward bytes
	proxyCut                        // close every connection, refuse new ones
	proxyBlackhole                  // keep connections, drop every byte
)

type proxyConn struct {
	client, server net.Conn
}

func (c *proxyConn) close() {
	c.client.Close()
	if c.server != nil {
		c.server.Close()
	}
}

// New starts a proxy to target on a free loopback port. Close stops it.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy to %s: listen: %w", target, err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[*proxyConn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		p.mu.Unlock()
		switch mode {
		case proxyCut:
			c.Close()
			continue
		case proxyBlackhole:
			pc := &proxyConn{client: c}
			p.add(pc)
			p.wg.Add(1)
			go func() { defer p.wg.Done(); io.Copy(io.Discard, c); p.remove(pc) }()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		pc := &proxyConn{client: c, server: s}
		p.add(pc)
		p.wg.Add(2)
		go p.pipe(pc, s, c)
		go p.pipe(pc, c, s)
	}
}

// pipe copies src to dst while the proxy is open; in blackhole mode it reads
// and drops.
func (p *Proxy) pipe(pc *proxyConn, dst, src net.Conn) {
	defer p.wg.Done()
	defer p.remove(pc)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			mode := p.mode
			p.mu.Unlock()
			if mode == proxyOpen {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) add(pc *proxyConn) {
	p.mu.Lock()
	p.conns[pc] = struct{}{}
	p.mu.Unlock()
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
// Restore: the client sees connection resets at once.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.mode = proxyCut
	p.closeAll()
	p.mu.Unlock()
}

// Blackhole keeps connections open but drops every byte in both directions,
// and holds new connections without reaching the server: the client sees
// silence, as behind a dead network link.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	p.mode = proxyBlackhole
	p.mu.Unlock()
}

// Restore ends a partition. Connections held by a blackhole are closed so
// that the client reconnects.
func (p *Proxy) Restore() {
	p.mu.Lock()
	if p.mode == proxyBlackhole {
		p.closeAll()
	}
	p.mode = proxyOpen
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
