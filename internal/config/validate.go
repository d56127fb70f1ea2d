package config

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/auth"
)

// Validate checks every setting and returns Errors listing each problem
// with the key and where the value came from (file:line:col, env or flag),
// or nil.
func (c *Config) Validate() error {
	var errs Errors
	bad := func(key, format string, a ...any) {
		where := ""
		if o, ok := c.origins[key]; ok {
			where = o.what
		}
		errs = append(errs, &FieldError{Where: where, Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	name := func(key, v string) {
		if err := drover.ValidateQueueName(v); err != nil {
			detail := strings.TrimPrefix(err.Error(), drover.ErrInvalidQueueName.Error()+": ")
			bad(key, "invalid name: %s", detail)
		}
	}
	addr := func(key, v string) {
		if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
			bad(key, "want host:port, have %q", v)
		}
	}
	positive := func(key string, d time.Duration) {
		if d <= 0 {
			bad(key, "must be > 0, have %s", d)
		}
	}
	notNegative := func(key string, d time.Duration) {
		if d < 0 {
			bad(key, "must be ≥ 0, have %s", d)
		}
	}

	name("cluster", c.Cluster)

	zk := c.ZooKeeper
	if len(zk.Servers) == 0 {
		bad("zookeeper.servers", "at least one server is required")
	}
	for _, s := range zk.Servers {
		if !strings.Contains(s, ":") {
			continue // the port defaults to 2181
		}
		addr("zookeeper.servers", s)
	}
	if r := zk.Root; r != "" && (!strings.HasPrefix(r, "/") || r == "/" || strings.HasSuffix(r, "/") || path.Clean(r) != r) {
		bad("zookeeper.root", "want an absolute, clean path other than /, have %q", r)
	}
	positive("zookeeper.session_timeout", zk.SessionTimeout)
	notNegative("zookeeper.connect_timeout", zk.ConnectTimeout)
	if zk.Auth != "" {
		if u, p, ok := strings.Cut(zk.Auth, ":"); !ok || u == "" || p == "" {
			bad("zookeeper.auth", "want user:password")
		}
	}
	c.validateTLS("zookeeper.tls.", zk.TLS, bad)

	r := c.Redis
	if len(r.Addrs) == 0 {
		bad("redis.addrs", "at least one address is required")
	}
	for _, a := range r.Addrs {
		addr("redis.addrs", a)
	}
	if r.DB < 0 {
		bad("redis.db", "must be ≥ 0, have %d", r.DB)
	}
	if r.Cluster && r.MasterName != "" {
		bad("redis.cluster", "Cluster and Sentinel (master_name %q) exclude each other", r.MasterName)
	}
	if r.Cluster && r.DB != 0 {
		bad("redis.db", "Redis Cluster has only database 0, have %d", r.DB)
	}
	if r.Prefix == "" || strings.ContainsAny(r.Prefix, "{} \t\n") {
		bad("redis.prefix", "must be non-empty without braces or white space, have %q", r.Prefix)
	}
	c.validateTLS("redis.tls.", r.TLS, bad)
	switch d := r.Durable; {
	case d.Mode != "auto" && d.Mode != "on" && d.Mode != "off":
		bad("redis.durable.mode", `want "auto", "on" or "off", have %q`, d.Mode)
	case d.Replicas < 1:
		bad("redis.durable.replicas", "must be ≥ 1 (turn the mode off with redis.durable.mode = \"off\"), have %d", d.Replicas)
	case d.Timeout <= 0 || d.Timeout > maxDurableTimeout || d.Timeout%time.Millisecond != 0:
		bad("redis.durable.timeout", "want whole milliseconds in (0, %s], have %s", maxDurableTimeout, d.Timeout)
	}

	w := c.Worker
	name("worker.name", w.Name)
	if w.Capacity < 1 {
		bad("worker.capacity", "must be ≥ 1, have %d", w.Capacity)
	}
	for _, t := range w.Tags {
		if t == "" || strings.ContainsAny(t, ", \t\n") {
			bad("worker.tags", "a tag must be non-empty without commas or white space, have %q", t)
		}
	}
	if w.AdminEnabled() {
		addr("worker.admin_addr", w.AdminAddr)
	}
	notNegative("worker.drain_timeout", w.DrainTimeout)
	if w.BatchSize < 1 {
		bad("worker.batch_size", "must be ≥ 1, have %d", w.BatchSize)
	}
	if !slices.Contains(Strategies, w.Strategy) {
		bad("worker.strategy", "want one of %s, have %q", strings.Join(Strategies, ", "), w.Strategy)
	}
	notNegative("worker.settle", w.Settle)
	if w.BalanceEvery < time.Second {
		// Each correction asks Redis about batches of queues and may move
		// some: more often than a second would correct the churn of one
		// settle window after another, which is what pacing prevents.
		bad("worker.balance_every", "must be ≥ 1s (at most one balance correction per period), have %s", w.BalanceEvery)
	}
	if w.RedisGiveUpAfter < time.Second {
		bad("worker.redis_giveup_after", "must be ≥ 1s (one ping per fifth of it), have %s", w.RedisGiveUpAfter)
	}

	s := c.Scheduler
	if s.AdminEnabled() {
		addr("scheduler.admin_addr", s.AdminAddr)
	}
	positive("scheduler.poll_interval", s.PollInterval)
	notNegative("scheduler.misfire_grace", s.MisfireGrace)
	if s.CatchupLimit < 1 {
		bad("scheduler.catchup_limit", "must be ≥ 1, have %d", s.CatchupLimit)
	}

	if c.Metrics.Statsd != "" {
		addr("metrics.statsd", c.Metrics.Statsd)
	}
	c.validateScaler(bad, addr)
	if t := c.Tracing; t.SampleRatio < 0 || t.SampleRatio > 1 {
		bad("tracing.sample_ratio", "want a number from 0 to 1, have %g", t.SampleRatio)
	}
	if t := c.Tracing; t.Endpoint != "" {
		addr("tracing.endpoint", t.Endpoint)
	}
	if !slices.Contains(LogLevels, c.Log.Level) {
		bad("log.level", "want one of %s, have %q", strings.Join(LogLevels, ", "), c.Log.Level)
	}
	if _, err := auth.ParseTokens(c.Auth.Tokens); err != nil {
		bad("auth.tokens", "%v", err)
	}
	if k := c.Auth.SessionKey; k != "" && len(k) < 16 {
		bad("auth.session_key", "want at least 16 characters (say, `openssl rand -hex 32`)")
	}
	addr("web.addr", c.Web.Addr)
	if (c.Web.TLSCert == "") != (c.Web.TLSKey == "") {
		bad("web.tls_cert", "tls_cert and tls_key go together")
	}
	statOK := true
	for _, f := range []struct{ key, file string }{{"web.tls_cert", c.Web.TLSCert}, {"web.tls_key", c.Web.TLSKey}} {
		if f.file != "" {
			if _, err := os.Stat(f.file); err != nil {
				bad(f.key, "%v", err)
				statOK = false
			}
		}
	}
	if statOK && c.Web.TLSCert != "" && c.Web.TLSKey != "" {
		checkKeyPair("web.tls_key", c.Web.TLSCert, c.Web.TLSKey, bad)
	}
	positive("web.session_ttl", c.Web.SessionTTL)
	return errs.err()
}

func (c *Config) validateTLS(prefix string, t TLS, bad func(key, format string, a ...any)) {
	for _, f := range []struct{ key, file string }{
		{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile},
	} {
		if f.file == "" {
			continue
		}
		if !t.Enabled {
			bad(prefix+f.key, "set, but %senabled is false", prefix)
			continue
		}
		if _, err := os.Stat(f.file); err != nil {
			bad(prefix+f.key, "%v", err)
		}
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		bad(prefix+"cert_file", "cert_file and key_file go together")
	}
	if t.Enabled && t.CertFile != "" && t.KeyFile != "" && fileExists(t.CertFile) && fileExists(t.KeyFile) {
		checkKeyPair(prefix+"key_file", t.CertFile, t.KeyFile, bad)
	}
}

// checkKeyPair reports, against key, a certificate and key that do not
// load as a pair (unreadable PEM, or a key that is not the certificate's):
// drover config check says so, rather than the server failing at listen
// or at its first handshake (issue 41).
func checkKeyPair(key, certFile, keyFile string, bad func(key, format string, a ...any)) {
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		bad(key, "the certificate %s and the key %s are not a pair: %v", certFile, keyFile, err)
	}
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// validateScaler checks block scaler. The gRPC scaler reveals queue names
// and backlogs, so an address beyond loopback needs mutual TLS.
func (c *Config) validateScaler(bad func(key, format string, a ...any), addr func(key, v string)) {
	sc := c.Scaler
	addr("scaler.addr", sc.Addr)
	if sc.AdminAddr != "" && sc.AdminAddr != "off" {
		addr("scaler.admin_addr", sc.AdminAddr)
	}
	if sc.PollInterval <= 0 {
		bad("scaler.poll_interval", "must be > 0, have %s", sc.PollInterval)
	}
	if sc.TargetLag < 1 {
		bad("scaler.target_lag", "must be ≥ 1, have %d", sc.TargetLag)
	}
	for _, p := range sc.Selections {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			bad("scaler.selections", "want a queue name or glob, have %q", p)
		}
	}
	c.validateTLS("scaler.tls.", sc.TLS, bad)
	if sc.TLS.Enabled && (sc.TLS.CertFile == "" || sc.TLS.KeyFile == "") {
		bad("scaler.tls.cert_file", "the scaler's TLS needs its certificate: cert_file and key_file")
	}
	if !IsLoopback(sc.Addr) && (!sc.TLS.Enabled || sc.TLS.CAFile == "") {
		bad("scaler.addr", "%q is beyond loopback: it needs mutual TLS (scaler.tls.enabled, cert_file, key_file and ca_file for the clients' CA)", sc.Addr)
	}
}

// IsLoopback reports whether a listen address host:port binds only the
// loopback interface ("localhost", 127.0.0.0/8, ::1).
func IsLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
