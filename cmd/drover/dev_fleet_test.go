package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDevReportsAChildThatDiesAtOnce: of two children, the one that exits
// while the other runs is delivered on died before anything is stopped,
// and its report names it, says how it ended and quotes its log's last
// lines.
func TestDevReportsAChildThatDiesAtOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := newApp(strings.NewReader(""), io.Discard, io.Discard, []string{"PATH=" + os.Getenv("PATH")})
	fl := newFleet()
	defer fl.stop(io.Discard)
	if err := fl.start(a, "/bin/sh", dir, "worker-1", "", nil, false, "-c", "exec sleep 600"); err != nil {
		t.Fatal(err)
	}
	if err := fl.start(a, "/bin/sh", dir, "worker-2", "", nil, false, "-c", "echo starting; echo 'worker.admin_addr: listen: address already in use'; exit 3"); err != nil {
		t.Fatal(err)
	}
	fl.watch()
	select {
	case c := <-fl.died:
		r := c.report()
		for _, want := range []string{"dev: worker-2", "exit status 3", "worker-2.log", "  starting\n", "address already in use"} {
			if !strings.Contains(r, want) {
				t.Errorf("want the report to hold %q, have:\n%s", want, r)
			}
		}
		if again := c.report(); again != "" {
			t.Errorf("want one report per child, have a second:\n%s", again)
		}
	case <-fl.allExited:
		t.Fatal("want worker-2 reported while worker-1 runs, have every child exited")
	case <-time.After(time.Minute):
		t.Fatal("worker-2 was not reported within a minute of exiting")
	}
	fl.stop(io.Discard)
	select {
	case c := <-fl.died:
		t.Fatalf("want no report for a child stopped by stop, have %s", c.name)
	default:
	}
}

// Dev binds each child's admin port and hands the socket down as fd 3,
// named in the child's environment: no other process can take the port
// between dev choosing it and the child listening on it.
func TestDevHandsEachChildItsAdminSocket(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a := newApp(strings.NewReader(""), io.Discard, io.Discard, []string{"PATH=" + os.Getenv("PATH")})
	fl := newFleet()
	defer fl.stop(io.Discard)
	check := `[ "$` + adminFDEnv + `" = 3 ] || exit 5; [ -S /dev/fd/3 ] || exit 6; exit 0`
	if err := fl.start(a, "/bin/sh", dir, "worker-1", ln.Addr().String(), ln.(*net.TCPListener), false, "-c", check); err != nil {
		t.Fatal(err)
	}
	fl.watch()
	c := <-fl.died
	<-c.done
	if c.err != nil {
		t.Fatalf("want the child to find a socket on fd 3 named by %s, have: %v (exit 5: not named, 6: not a socket)", adminFDEnv, c.err)
	}
}

// A worker or scheduler started by dev serves its admin server on the
// socket dev handed down, whatever its admin address says, and clears the
// variable so that its own task children do not take it.
func TestAdminServerUsesTheSocketHandedDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	addr := ln.Addr().String()
	ln.Close() // f keeps the socket listening
	t.Setenv(adminFDEnv, strconv.Itoa(int(f.Fd())))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv, err := newAdminServer("worker.admin_addr", "127.0.0.1:1", h)
	if err != nil {
		t.Fatal(err)
	}
	if _, still := os.LookupEnv(adminFDEnv); still {
		t.Errorf("want %s cleared after use", adminFDEnv)
	}
	if srv.addr != addr {
		t.Fatalf("want the admin server on the handed-down socket %s, have %s", addr, srv.addr)
	}
	go srv.serve()
	defer srv.interrupt(nil)
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Fatalf("want the handler's answer, have %q", body)
	}
}

func TestAdminServerRejectsABadHandedDownSocket(t *testing.T) {
	t.Setenv(adminFDEnv, "stdin")
	if _, err := newAdminServer("worker.admin_addr", "127.0.0.1:0", http.NotFoundHandler()); err == nil || !strings.Contains(err.Error(), adminFDEnv) {
		t.Fatalf("want an error naming %s, have %v", adminFDEnv, err)
	}
}
