package proxy

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echo serves lines back on a free port until the test ends.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(l))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through addr and reads the echo, giving up after
// wait. A trip that must succeed waits long (on a loaded 2-core machine
// under -race a 500 ms deadline could fail it); one through a blackhole
// fails only by its deadline, so it waits briefly.
// The line goes as one length-prefixed frame (no byte of the prefix is a
// newline), so that a ZooKeeper-counting proxy forwards it too.
func roundTrip(addr string, wait time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte("\x00\x00\x00\x05ping\n")); err != nil {
		return err
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	return err
}

func TestCutBlackholeRestore(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"bytes", nil},
		{"ZooKeeper frames, counted", []Option{CountZooKeeper()}},
	} {
		t.Run(tc.name, func(t *testing.T) { testCutBlackholeRestore(t, tc.opts...) })
	}
}

func testCutBlackholeRestore(t *testing.T, opts ...Option) {
	p, err := New(echo(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := roundTrip(p.Addr, 30*time.Second); err != nil {
		t.Fatalf("open: want a round trip, have %v", err)
	}
	p.Cut()
	if err := roundTrip(p.Addr, 500*time.Millisecond); err == nil {
		t.Fatal("cut: want the round trip to fail, it succeeded")
	}
	p.Restore()
	if err := roundTrip(p.Addr, 30*time.Second); err != nil {
		t.Fatalf("restored: want a round trip, have %v", err)
	}
	p.Blackhole()
	if err := roundTrip(p.Addr, 500*time.Millisecond); err == nil {
		t.Fatal("blackhole: want the round trip to fail, it succeeded")
	}
	p.Restore()
	if err := roundTrip(p.Addr, 30*time.Second); err != nil {
		t.Fatalf("restored: want a round trip, have %v", err)
	}
}
