package testenv

import (
	"testing"

	"github.com/drover-dev/drover/internal/testing/proxy"
)

// Proxy is a TCP proxy between a client and a server, for partition tests.
// Point the client at Addr. Cut (close every connection and refuse new ones)
// and Blackhole (hold connections, drop every byte) start a partition;
// Restore ends it. It is internal/testing/proxy, the proxy of the chaos harness
// and the benchmarks, closed when the test ends.
type Proxy struct {
	*proxy.Proxy
}

// NewProxy starts a proxy to target on a free loopback port. It is closed
// when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := proxy.New(target)
	if err != nil {
		t.Fatalf("testenv: proxy: %v", err)
	}
	t.Cleanup(p.Close)
	return &Proxy{Proxy: p}
}
