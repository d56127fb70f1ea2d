package main

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/queue"
)

// session connects to the cluster's ZooKeeper root, for set-up and checks
// the command line cannot make.
func (c *cluster) session() *coordinator.Session {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: c.zk, Root: c.root, SessionTimeout: 4 * time.Second})
	if err != nil {
		c.t.Fatalf("connect to ZooKeeper: %v", err)
	}
	c.t.Cleanup(func() { s.Close() })
	return s
}

// store opens the cluster's queue store in Redis.
func (c *cluster) store() *queue.Store {
	c.t.Helper()
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{c.redis}})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { rdb.Close() })
	st, err := queue.New(queue.Config{Client: rdb, Prefix: c.prefix})
	if err != nil {
		c.t.Fatal(err)
	}
	return st
}

// closedAddr returns a loopback address that refuses connections until the
// test ends: a socket bound to it (without SO_REUSEADDR) and never
// listening holds the port. A port merely closed again, as this helper
// used to return, is free: a server started meanwhile by a parallel test
// run picks its port the same way (listen on :0) and could take it, and a
// test expecting "unreachable" would then reach a real ZooKeeper or Redis.
func closedAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}

// freeAddr returns a loopback address that was free a moment ago, for a
// process under test to listen on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// withEnv returns env with the variables set (KEY=VALUE), replacing any
// earlier value.
func withEnv(env []string, kvs ...string) []string {
	out := append([]string(nil), env...)
	for _, kv := range kvs {
		key, _, _ := strings.Cut(kv, "=")
		out = slices.DeleteFunc(out, func(e string) bool { return strings.HasPrefix(e, key+"=") })
		out = append(out, kv)
	}
	return out
}

// jsonUnmarshal decodes s into v.
func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
