package auth

import (
	"net"
	"net/http"
	"strings"
)

// LocalHost reports whether the request's Host names this server in a way
// that a page of another site cannot: a loopback or unspecified address
// (0.0.0.0, ::), "localhost", or one of names (the configured listen address and public name; a
// "host:port" is compared by its host). A server that trusts loopback
// clients must refuse every other Host: a web page whose own name an
// attacker rebinds to 127.0.0.1 (DNS rebinding) is same-origin with it,
// and the browser is a loopback client.
func LocalHost(r *http.Request, names ...string) bool {
	host := hostOnly(r.Host)
	if host == "" {
		return false
	}
	if isLoopbackHost(host) || unspecified(host) {
		// 0.0.0.0 and :: reach this host too (a member registers its
		// wildcard listen address, which ctl then dials); no DNS name
		// can make them a page's origin.
		return true
	}
	for _, n := range names {
		if n = hostOnly(n); n != "" && strings.EqualFold(n, host) {
			return true
		}
	}
	return false
}

// hostOnly returns the host of "host", "host:port", "[v6]" or "[v6]:port",
// lower-cased and without a trailing dot.
func hostOnly(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// unspecified reports whether host is 0.0.0.0 or ::.
func unspecified(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}
