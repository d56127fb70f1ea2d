package main

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestDevReportsAndRestartsADeadConsole: when the dev console stops while
// dev runs, dev says so and serves it again on the address it printed.
func TestDevReportsAndRestartsADeadConsole(t *testing.T) {
	var stderr syncBuffer
	addrs := make(chan string, 2)
	second := make(chan struct{})
	calls := 0
	run := func(ctx context.Context, addr string, ready func(string)) error {
		calls++
		addrs <- addr
		if calls == 1 {
			ready("http://127.0.0.1:5555/")
			return errors.New("ZooKeeper session lost")
		}
		ready("http://127.0.0.1:5555/")
		close(second)
		<-ctx.Done()
		return nil
	}
	url, stop, err := superviseDevWeb(context.Background(), run, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if url != "http://127.0.0.1:5555/" {
		t.Fatalf("url: want http://127.0.0.1:5555/, have %s", url)
	}
	<-second
	stop()
	if a1, a2 := <-addrs, <-addrs; a1 != "127.0.0.1:0" || a2 != "127.0.0.1:5555" {
		t.Fatalf("addresses: want 127.0.0.1:0 then the printed 127.0.0.1:5555, have %s then %s", a1, a2)
	}
	if s := stderr.String(); !strings.Contains(s, "web console stopped (ZooKeeper session lost)") || !strings.Contains(s, "127.0.0.1:5555") {
		t.Fatalf("stderr: want the stop reported with the address, have %q", s)
	}
}
