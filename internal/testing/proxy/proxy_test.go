package proxy

import (
	"bufio"
	"io"
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

// Retarget closes the connections to the old server and sends new ones to
// the new server.
func TestRetarget(t *testing.T) {
	a, b := echoNamed(t, "a"), echoNamed(t, "b")
	p, err := New(a)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := readName(t, c); got != "a" {
		t.Fatalf("before Retarget: want server a, have %q", got)
	}
	p.Retarget(b)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("the connection to the old server: want closed by Retarget, read a byte")
	}
	c2, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := readName(t, c2); got != "b" {
		t.Fatalf("after Retarget: want server b, have %q", got)
	}
}

// echoNamed is a server that writes name to every connection and keeps it
// open.
func echoNamed(t *testing.T, name string) string {
	t.Helper()
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
			c.Write([]byte(name))
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func readName(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(buf)
}
