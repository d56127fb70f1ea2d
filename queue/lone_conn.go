package queue

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// loneConn is the connection the lone enqueue (enqueueAlone) keeps from one
// call to the next. A pooled call takes a connection from go-redis's pool
// and gives it back, and the pool checks every connection it hands out
// with a syscall of its own (a non-blocking peek for a close by the
// server): on a producer that enqueues one message at a time that was 8%
// of the client's CPU and a syscall on every round trip's path
// (docs/decisions.md, "Issue 43: the lone enqueue keeps its connection").
// Kept, the connection is used as is while it keeps answering; one that
// rested longer than loneIdle goes back to the pool and the call takes a
// checked one, as before.
//
// One call uses it at a time (take locks it, give unlocks it); a call that
// finds it in use goes through the pool. Only a standalone or Sentinel
// client (*redis.Client) has a connection to keep: a Cluster's calls
// always go through its pools.
type loneConn struct {
	mu   sync.Mutex
	conn *redis.Conn
	last time.Time // when conn last answered
}

// loneIdle is how long the kept connection may rest before a call gives it
// back to the pool and takes a checked one: a connection the server closed
// while the producer was quiet (a restart, its idle timeout, CLIENT KILL)
// is found by the pool's check, not by a failed enqueue.
const loneIdle = time.Second

// take returns the kept connection for one call, or nil when the call goes
// through the pool (another call holds it, or rdb is not a *redis.Client).
// A call given a connection must end with give.
func (l *loneConn) take(rdb redis.UniversalClient, now time.Time) *redis.Conn {
	c, ok := rdb.(*redis.Client)
	if !ok || !l.mu.TryLock() {
		return nil
	}
	if l.conn != nil && now.Sub(l.last) > loneIdle {
		_ = l.conn.Close() // back to the pool, which checks it before its next use
		l.conn = nil
	}
	if l.conn == nil {
		l.conn = c.Conn() // its first command takes a checked connection from the pool
	}
	return l.conn
}

// give ends the call that took the connection at now with err: a
// connection that failed is given back (go-redis closes it if it is
// broken) and the next call takes another.
func (l *loneConn) give(now time.Time, err error) {
	if err != nil {
		_ = l.conn.Close()
		l.conn = nil
	} else {
		l.last = now
	}
	l.mu.Unlock()
}

// closedUnder reports whether err says the kept connection was closed
// before the call reached Redis: by the server (a restart, CLIENT KILL:
// the read finds the end of the stream or a reset, and a server that
// closed the connection runs nothing sent on it after) or by go-redis
// (a Sentinel failover closes the connections to the old master). The
// call then goes again through the pool, as the pool's check would have
// sent it to a live connection. (A server that crashed between running the
// call and answering it is the exception: the second send finds the id
// written and answers Duplicate; the message is stored once.) A timeout
// is not one of them: the script may be running, and a call is never sent
// twice on a timeout (NewClient).
func closedUnder(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, redis.ErrClosed)
}
