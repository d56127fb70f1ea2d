package queue

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// blackhole listens on a free loopback port, accepts every connection and
// never answers: a blackholed link, or a proxy whose upstream is gone. It
// reports on read each connection's first bytes (the client's handshake).
func blackhole(t *testing.T) (addr string, read <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	got := make(chan struct{}, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
			go func() {
				buf := make([]byte, 512)
				if n, _ := c.Read(buf); n > 0 {
					select {
					case got <- struct{}{}:
					default:
					}
				}
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	return l.Addr().String(), got
}

// A subscription whose handshake never gets an answer returns as soon as
// its context ends, although the client's read timeout is an hour: a
// leader resigning in a blackholed Redis outage must not keep its term
// (the family registrar's unowned wake-ups) until the handshake times out.
// Before confirmedSubscription, each of these calls stayed blocked for the
// read timeout after the cancel.
func TestASubscriptionInAHandshakeReturnsWhenItsContextEnds(t *testing.T) {
	subscribe := map[string]func(ctx context.Context, s *Store) error{
		"member wake-ups": func(ctx context.Context, s *Store) error {
			_, err := s.Listener().Wakeups(ctx, "m1")
			return err
		},
		"unowned wake-ups": func(ctx context.Context, s *Store) error {
			_, err := s.Families().UnownedWakeups(ctx)
			return err
		},
		"all wake-ups": func(ctx context.Context, s *Store) error {
			_, err := s.Listener().AllWakeups(ctx)
			return err
		},
	}
	for name, call := range subscribe {
		t.Run(name, func(t *testing.T) {
			addr, handshake := blackhole(t)
			rdb, err := NewClient(ClientOptions{Addrs: []string{addr}, ReadTimeout: time.Hour, WriteTimeout: time.Hour, DialTimeout: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rdb.Close() })
			s := newTestStore(t, rdb, nil)
			ctx, cancel := context.WithCancel(context.Background())
			returned := make(chan error, 1)
			go func() { returned <- call(ctx, s) }()
			<-handshake // the client is now waiting for the handshake's reply
			cancel()
			select {
			case err := <-returned:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v, want context.Canceled", err)
				}
			case <-time.After(time.Minute): // a hang, not a timing check: the read timeout is an hour
				t.Fatal("the subscription is still waiting for its handshake a minute after its context ended")
			}
		})
	}
}
