package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// kind is the type of a setting's value.
type kind int

const (
	kindString kind = iota
	kindStrings
	kindInt
	kindBool
	kindDuration
	kindFloat
)

func (k kind) String() string {
	return [...]string{"a string", "a list of strings", "a whole number", "true or false", `a duration like "10s"`, "a number"}[k]
}

// field is one setting. The table below drives the file decoder, the
// environment, flags, the effective-config printer and docs/cli.md.
type field struct {
	key    string
	kind   kind
	secret bool // redacted when printed
	// ref returns a pointer to the value in c: *string, *[]string, *int,
	// *bool or *time.Duration according to kind.
	ref func(c *Config) any
}

var fields = []field{
	{key: "cluster", kind: kindString, ref: func(c *Config) any { return &c.Cluster }},

	{key: "zookeeper.servers", kind: kindStrings, ref: func(c *Config) any { return &c.ZooKeeper.Servers }},
	{key: "zookeeper.root", kind: kindString, ref: func(c *Config) any { return &c.ZooKeeper.Root }},
	{key: "zookeeper.session_timeout", kind: kindDuration, ref: func(c *Config) any { return &c.ZooKeeper.SessionTimeout }},
	{key: "zookeeper.connect_timeout", kind: kindDuration, ref: func(c *Config) any { return &c.ZooKeeper.ConnectTimeout }},
	{key: "zookeeper.auth", kind: kindString, secret: true, ref: func(c *Config) any { return &c.ZooKeeper.Auth }},
	{key: "zookeeper.tls.enabled", kind: kindBool, ref: func(c *Config) any { return &c.ZooKeeper.TLS.Enabled }},
	{key: "zookeeper.tls.ca_file", kind: kindString, ref: func(c *Config) any { return &c.ZooKeeper.TLS.CAFile }},
	{key: "zookeeper.tls.cert_file", kind: kindString, ref: func(c *Config) any { return &c.ZooKeeper.TLS.CertFile }},
	{key: "zookeeper.tls.key_file", kind: kindString, ref: func(c *Config) any { return &c.ZooKeeper.TLS.KeyFile }},
	{key: "zookeeper.tls.server_name", kind: kindString, ref: func(c *Config) any { return &c.ZooKeeper.TLS.ServerName }},
	{key: "zookeeper.tls.insecure_skip_verify", kind: kindBool, ref: func(c *Config) any { return &c.ZooKeeper.TLS.InsecureSkipVerify }},

	{key: "redis.addrs", kind: kindStrings, ref: func(c *Config) any { return &c.Redis.Addrs }},
	{key: "redis.cluster", kind: kindBool, ref: func(c *Config) any { return &c.Redis.Cluster }},
	{key: "redis.master_name", kind: kindString, ref: func(c *Config) any { return &c.Redis.MasterName }},
	{key: "redis.username", kind: kindString, ref: func(c *Config) any { return &c.Redis.Username }},
	{key: "redis.password", kind: kindString, secret: true, ref: func(c *Config) any { return &c.Redis.Password }},
	{key: "redis.db", kind: kindInt, ref: func(c *Config) any { return &c.Redis.DB }},
	{key: "redis.prefix", kind: kindString, ref: func(c *Config) any { return &c.Redis.Prefix }},
	{key: "redis.durable.mode", kind: kindString, ref: func(c *Config) any { return &c.Redis.Durable.Mode }},
	{key: "redis.durable.replicas", kind: kindInt, ref: func(c *Config) any { return &c.Redis.Durable.Replicas }},
	{key: "redis.durable.timeout", kind: kindDuration, ref: func(c *Config) any { return &c.Redis.Durable.Timeout }},
	{key: "redis.durable.aof", kind: kindBool, ref: func(c *Config) any { return &c.Redis.Durable.AOF }},
	{key: "redis.tls.enabled", kind: kindBool, ref: func(c *Config) any { return &c.Redis.TLS.Enabled }},
	{key: "redis.tls.ca_file", kind: kindString, ref: func(c *Config) any { return &c.Redis.TLS.CAFile }},
	{key: "redis.tls.cert_file", kind: kindString, ref: func(c *Config) any { return &c.Redis.TLS.CertFile }},
	{key: "redis.tls.key_file", kind: kindString, ref: func(c *Config) any { return &c.Redis.TLS.KeyFile }},
	{key: "redis.tls.server_name", kind: kindString, ref: func(c *Config) any { return &c.Redis.TLS.ServerName }},
	{key: "redis.tls.insecure_skip_verify", kind: kindBool, ref: func(c *Config) any { return &c.Redis.TLS.InsecureSkipVerify }},

	{key: "worker.name", kind: kindString, ref: func(c *Config) any { return &c.Worker.Name }},
	{key: "worker.capacity", kind: kindInt, ref: func(c *Config) any { return &c.Worker.Capacity }},
	{key: "worker.tags", kind: kindStrings, ref: func(c *Config) any { return &c.Worker.Tags }},
	{key: "worker.admin_addr", kind: kindString, ref: func(c *Config) any { return &c.Worker.AdminAddr }},
	{key: "worker.drain_timeout", kind: kindDuration, ref: func(c *Config) any { return &c.Worker.DrainTimeout }},
	{key: "worker.batch_size", kind: kindInt, ref: func(c *Config) any { return &c.Worker.BatchSize }},
	{key: "worker.strategy", kind: kindString, ref: func(c *Config) any { return &c.Worker.Strategy }},
	{key: "worker.settle", kind: kindDuration, ref: func(c *Config) any { return &c.Worker.Settle }},
	{key: "worker.balance_every", kind: kindDuration, ref: func(c *Config) any { return &c.Worker.BalanceEvery }},
	{key: "worker.redis_giveup_after", kind: kindDuration, ref: func(c *Config) any { return &c.Worker.RedisGiveUpAfter }},

	{key: "scheduler.admin_addr", kind: kindString, ref: func(c *Config) any { return &c.Scheduler.AdminAddr }},
	{key: "scheduler.poll_interval", kind: kindDuration, ref: func(c *Config) any { return &c.Scheduler.PollInterval }},
	{key: "scheduler.misfire_grace", kind: kindDuration, ref: func(c *Config) any { return &c.Scheduler.MisfireGrace }},
	{key: "scheduler.catchup_limit", kind: kindInt, ref: func(c *Config) any { return &c.Scheduler.CatchupLimit }},

	{key: "metrics.prometheus", kind: kindBool, ref: func(c *Config) any { return &c.Metrics.Prometheus }},
	{key: "metrics.statsd", kind: kindString, ref: func(c *Config) any { return &c.Metrics.Statsd }},
	{key: "metrics.groups", kind: kindStrings, ref: func(c *Config) any { return &c.Metrics.Groups }},
	{key: "metrics.max_groups", kind: kindInt, ref: func(c *Config) any { return &c.Metrics.MaxGroups }},
	{key: "metrics.detail.top_oldest", kind: kindInt, ref: func(c *Config) any { return &c.Metrics.Detail.TopOldest }},
	{key: "metrics.detail.top_lagging", kind: kindInt, ref: func(c *Config) any { return &c.Metrics.Detail.TopLagging }},
	{key: "metrics.detail.oldest_age_above", kind: kindDuration, ref: func(c *Config) any { return &c.Metrics.Detail.OldestAgeAbove }},
	{key: "metrics.detail.lag_above", kind: kindInt, ref: func(c *Config) any { return &c.Metrics.Detail.LagAbove }},
	{key: "metrics.detail.max", kind: kindInt, ref: func(c *Config) any { return &c.Metrics.Detail.Max }},

	{key: "scaler.addr", kind: kindString, ref: func(c *Config) any { return &c.Scaler.Addr }},
	{key: "scaler.admin_addr", kind: kindString, ref: func(c *Config) any { return &c.Scaler.AdminAddr }},
	{key: "scaler.poll_interval", kind: kindDuration, ref: func(c *Config) any { return &c.Scaler.PollInterval }},
	{key: "scaler.target_lag", kind: kindInt, ref: func(c *Config) any { return &c.Scaler.TargetLag }},
	{key: "scaler.selections", kind: kindStrings, ref: func(c *Config) any { return &c.Scaler.Selections }},
	{key: "scaler.tls.enabled", kind: kindBool, ref: func(c *Config) any { return &c.Scaler.TLS.Enabled }},
	{key: "scaler.tls.ca_file", kind: kindString, ref: func(c *Config) any { return &c.Scaler.TLS.CAFile }},
	{key: "scaler.tls.cert_file", kind: kindString, ref: func(c *Config) any { return &c.Scaler.TLS.CertFile }},
	{key: "scaler.tls.key_file", kind: kindString, ref: func(c *Config) any { return &c.Scaler.TLS.KeyFile }},

	{key: "tracing.enabled", kind: kindBool, ref: func(c *Config) any { return &c.Tracing.Enabled }},
	{key: "tracing.endpoint", kind: kindString, ref: func(c *Config) any { return &c.Tracing.Endpoint }},
	{key: "tracing.insecure", kind: kindBool, ref: func(c *Config) any { return &c.Tracing.Insecure }},
	{key: "tracing.sample_ratio", kind: kindFloat, ref: func(c *Config) any { return &c.Tracing.SampleRatio }},
	{key: "tracing.service_name", kind: kindString, ref: func(c *Config) any { return &c.Tracing.ServiceName }},

	{key: "log.level", kind: kindString, ref: func(c *Config) any { return &c.Log.Level }},
	{key: "log.json", kind: kindBool, ref: func(c *Config) any { return &c.Log.JSON }},

	{key: "auth.tokens", kind: kindStrings, ref: func(c *Config) any { return &c.Auth.Tokens }},
	{key: "auth.session_key", kind: kindString, secret: true, ref: func(c *Config) any { return &c.Auth.SessionKey }},

	{key: "web.addr", kind: kindString, ref: func(c *Config) any { return &c.Web.Addr }},
	{key: "web.tls_cert", kind: kindString, ref: func(c *Config) any { return &c.Web.TLSCert }},
	{key: "web.tls_key", kind: kindString, ref: func(c *Config) any { return &c.Web.TLSKey }},
	{key: "web.session_ttl", kind: kindDuration, ref: func(c *Config) any { return &c.Web.SessionTTL }},
	{key: "web.public_name", kind: kindString, ref: func(c *Config) any { return &c.Web.PublicName }},

	{key: "ctl.token", kind: kindString, secret: true, ref: func(c *Config) any { return &c.Ctl.Token }},
}

// Keys returns every setting's key, in the order of the documentation.
func Keys() []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.key
	}
	return out
}

// EnvName returns the environment variable that sets key:
// DROVER_ + the key in upper case with dots as underscores.
func EnvName(key string) string {
	return "DROVER_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

func lookupField(key string) (field, bool) {
	i := slices.IndexFunc(fields, func(f field) bool { return f.key == key })
	if i < 0 {
		return field{}, false
	}
	return fields[i], true
}

// setString parses s as the field's kind and stores it in c. A list is
// comma-separated; blanks around items are dropped.
func (f field) setString(c *Config, s string) error {
	switch p := f.ref(c).(type) {
	case *string:
		*p = s
	case *[]string:
		var items []string
		for _, it := range strings.Split(s, ",") {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, it)
			}
		}
		*p = items
	case *int:
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("want %s, have %q", f.kind, s)
		}
		*p = v
	case *bool:
		v, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("want %s, have %q", f.kind, s)
		}
		*p = v
	case *time.Duration:
		v, err := parseDuration(s)
		if err != nil {
			return err
		}
		*p = v
	case *float64:
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return fmt.Errorf("want %s, have %q", f.kind, s)
		}
		*p = v
	}
	return nil
}

// parseDuration reads a Go duration ("10s", "1m30s"); "0" is zero.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("want %s, have %q", kindDuration, s)
	}
	return d, nil
}

// value returns the field's value in c, for printing.
func (f field) value(c *Config) any {
	switch p := f.ref(c).(type) {
	case *string:
		return *p
	case *[]string:
		if *p == nil {
			return []string{}
		}
		return *p
	case *int:
		return *p
	case *bool:
		return *p
	case *time.Duration:
		return p.String()
	case *float64:
		return *p
	}
	return nil
}
