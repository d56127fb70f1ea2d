package coordinator

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// contactClock records the last time bytes arrived from any server. The
// session's lost deadline is counted from it: the server's own expiry timer
// starts no earlier than our last exchange with it.
//
// It also holds the current connection, so that the session's monitor can
// drop a connection that has gone silent (see Session.evaluate).
type contactClock struct {
	unixNano atomic.Int64
	conn     atomic.Pointer[handshakeClampConn]
}

// dropCurrent closes the current connection (once); the library then
// reconnects to the next server.
func (c *contactClock) dropCurrent() {
	if hc := c.conn.Load(); hc != nil {
		hc.dropOnce.Do(func() { hc.Conn.Close() })
	}
}

func (c *contactClock) touch()          { c.unixNano.Store(time.Now().UnixNano()) }
func (c *contactClock) last() time.Time { return time.Unix(0, c.unixNano.Load()) }

// newDialer returns the zk.Dialer every session uses: TCP (or TLS when
// tlsConf is set), wrapped in a handshakeClampConn.
//
// hostOf maps the "ip:port" the library dials (it resolves names first) back
// to the host name written in the configuration, for TLS server names.
func newDialer(tlsConf *tls.Config, hostOf func(addr string) string, clamp time.Duration, contact *contactClock) zk.Dialer {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		conn, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		if tlsConf != nil {
			conf := tlsConf.Clone()
			if conf.ServerName == "" {
				conf.ServerName = hostOf(addr)
			}
			tc := tls.Client(conn, conf)
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			err := tc.HandshakeContext(ctx)
			cancel()
			if err != nil {
				conn.Close()
				return nil, err
			}
			conn = tc
		}
		hc := &handshakeClampConn{Conn: conn, clamp: clamp, contact: contact}
		contact.conn.Store(hc)
		return hc, nil
	}
}

// handshakeClampConn clamps the deadlines the library sets during the
// ZooKeeper connect handshake to at most clamp from now.
//
// The library gives the handshake 10 × the receive timeout (about 6.7 × the
// session timeout): a server that accepts the TCP connection but does not
// answer (a hung JVM, a follower that lost its leader) would hold the client
// past its session timeout, and the session would expire although a healthy
// quorum exists. With the clamp the client gives up on such a server after
// 2/3 × session timeout / number of servers and tries the next one, so that
// every server can be tried before the session is reported lost. The
// handshake ends when the library resets the read deadline to zero; from then
// on deadlines pass through unchanged.
//
// Every successful read also records contact with the server.
type handshakeClampConn struct {
	net.Conn
	clamp   time.Duration
	contact *contactClock

	mu        sync.Mutex
	handshake bool // true until the first zero read deadline
	started   bool
	dropOnce  sync.Once
}

func (c *handshakeClampConn) inHandshake() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		c.started, c.handshake = true, true
	}
	return c.handshake
}

func (c *handshakeClampConn) clampDeadline(t time.Time) time.Time {
	if limit := time.Now().Add(c.clamp); t.IsZero() || t.After(limit) {
		return limit
	}
	return t
}

// SetReadDeadline clamps t during the handshake; a zero t ends the handshake.
func (c *handshakeClampConn) SetReadDeadline(t time.Time) error {
	if c.inHandshake() {
		if t.IsZero() {
			c.mu.Lock()
			c.handshake = false
			c.mu.Unlock()
			return c.Conn.SetReadDeadline(t)
		}
		t = c.clampDeadline(t)
	}
	return c.Conn.SetReadDeadline(t)
}

// SetWriteDeadline clamps non-zero deadlines during the handshake.
func (c *handshakeClampConn) SetWriteDeadline(t time.Time) error {
	if !t.IsZero() && c.inHandshake() {
		t = c.clampDeadline(t)
	}
	return c.Conn.SetWriteDeadline(t)
}

// SetDeadline sets both deadlines through the clamping setters.
func (c *handshakeClampConn) SetDeadline(t time.Time) error {
	if err := c.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// Read records contact with the server when bytes arrive.
func (c *handshakeClampConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.contact.touch()
	}
	return n, err
}
