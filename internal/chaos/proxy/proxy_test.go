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

func roundTrip(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	return err
}

func TestCutBlackholeRestore(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := roundTrip(p.Addr); err != nil {
		t.Fatalf("open: want a round trip, have %v", err)
	}
	p.Cut()
	if err := roundTrip(p.Addr); err == nil {
		t.Fatal("cut: want the round trip to fail, it succeeded")
	}
	p.Restore()
	if err := roundTrip(p.Addr); err != nil {
		t.Fatalf("restored: want a round trip, have %v", err)
	}
	p.Blackhole()
	if err := roundTrip(p.Addr); err == nil {
		t.Fatal("blackhole: want the round trip to fail, it succeeded")
	}
	p.Restore()
	if err := roundTrip(p.Addr); err != nil {
		t.Fatalf("restored: want a round trip, have %v", err)
	}
}
