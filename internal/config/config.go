// Package config is the drover binary's configuration: a file (drover.hcl),
// DROVER_* environment variables and command-line flags, applied in that
// order over the defaults (flags win over the environment, the environment
// over the file, the file over the defaults).
//
// Every setting has one dotted key ("worker.admin_addr"). The key names the
// HCL attribute (attribute admin_addr in block worker), the environment
// variable (DROVER_WORKER_ADMIN_ADDR) and the field in error messages.
// docs/cli.md lists them all; Keys returns them.
package config

import (
	"time"

	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/fleet"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/rebalance"
	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/worker"
)

// Defaults of the fields of Config. A setting that configures a component
// takes that component's default, declared once in its package.
const (
	DefaultCluster        = coordinator.DefaultCluster
	DefaultZooKeeper      = "127.0.0.1:2181"
	DefaultSessionTimeout = coordinator.DefaultSessionTimeout
	DefaultRedis          = "127.0.0.1:6379"
	DefaultRedisPrefix    = queue.DefaultPrefix
	// DefaultDurableMode: the durable enqueue mode follows the deployment
	// (on with Sentinel, off otherwise: docs/semantics.md).
	DefaultDurableMode     = "auto"
	DefaultDurableReplicas = 1
	DefaultDurableTimeout  = 500 * time.Millisecond
	DefaultCapacity        = worker.DefaultCapacity
	DefaultAdminAddr       = "127.0.0.1:9090"
	// DefaultSchedulerAdminAddr differs from DefaultAdminAddr so that a
	// worker and a scheduler on one host, reading one file, both start.
	DefaultSchedulerAdminAddr = "127.0.0.1:9091"
	DefaultDrainTimeout       = worker.DefaultDrainTimeout
	DefaultBatchSize          = worker.DefaultBatchSize
	DefaultStrategy           = rebalance.DefaultName
	DefaultSettle             = fleet.DefaultSettle
	DefaultBalanceEvery       = fleet.DefaultBalanceEvery
	DefaultRedisGiveUpAfter   = fleet.DefaultRedisGiveUpAfter
	DefaultPollInterval       = scheduler.DefaultPollInterval
	DefaultMisfireGrace       = scheduler.DefaultMisfireGrace
	DefaultCatchupLimit       = scheduler.DefaultCatchupLimit
	DefaultLogLevel           = "info"
	DefaultWebAddr            = "127.0.0.1:8080"
	DefaultSessionTTL         = 12 * time.Hour
	// The scaler's ports follow the scheduler's, so all three commands
	// start side by side on one host with the defaults.
	DefaultScalerAddr     = "127.0.0.1:9093"
	DefaultScalerAdmin    = "127.0.0.1:9094"
	DefaultScalerPoll     = time.Second
	DefaultTargetLag      = 100
	DefaultTracingService = "drover"
	DefaultSampleRatio    = 1.0
)

// Strategies are the accepted values of worker.strategy.
var Strategies = []string{"sticky", "range", "round-robin"}

// LogLevels are the accepted values of log.level.
var LogLevels = []string{"trace", "debug", "info", "warn", "error"}

// Config is the effective configuration of one drover process. Load returns
// it with defaults applied; every field is documented with its key.
type Config struct {
	// Cluster names the fleet (key cluster); it selects the default
	// ZooKeeper root /drover/<cluster>. Default "default".
	Cluster   string
	ZooKeeper ZooKeeper
	Redis     Redis
	Worker    Worker
	Scheduler Scheduler
	Metrics   Metrics
	Log       Log
	Auth      Auth
	Web       Web
	Ctl       Ctl
	Scaler    Scaler
	Tracing   Tracing

	// File is the configuration file the values were read from; "" when
	// none was read.
	File string

	// origins maps a key to where its value came from (absent: default).
	origins map[string]origin
}

// ZooKeeper is block zookeeper: how to reach the coordination ensemble.
type ZooKeeper struct {
	// Servers is the ensemble, host:port each (zookeeper.servers).
	// Default ["127.0.0.1:2181"].
	Servers []string
	// Root is the path every node lives under (zookeeper.root).
	// Default "/drover/<cluster>".
	Root string
	// SessionTimeout asked of the server (zookeeper.session_timeout).
	// Default 10s.
	SessionTimeout time.Duration
	// ConnectTimeout bounds the wait for the first session
	// (zookeeper.connect_timeout); `drover ctl` gives up after it with exit
	// code 4. Default: the session timeout.
	ConnectTimeout time.Duration
	// Auth is "user:password" for the digest scheme (zookeeper.auth); nodes
	// are then created with a digest ACL. Default: none (open ACL).
	Auth string
	// TLS is block zookeeper.tls.
	TLS TLS
}

// Redis is block redis: where the queues live.
type Redis struct {
	// Addrs are host:port addresses (redis.addrs): the server, Cluster seed
	// nodes, or the Sentinels when MasterName is set. Default
	// ["127.0.0.1:6379"].
	Addrs []string
	// Cluster selects Redis Cluster (redis.cluster); implied by more than
	// one address without a master name. Default false.
	Cluster bool
	// MasterName selects Sentinel (redis.master_name). Default: none.
	MasterName string
	// Username and Password authenticate (redis.username, redis.password).
	// Prefer DROVER_REDIS_PASSWORD to writing the password into the file.
	Username string
	Password string
	// DB is the database number (redis.db). Default 0.
	DB int
	// Prefix starts every key (redis.prefix). Default "drover".
	Prefix string
	// TLS is block redis.tls.
	TLS TLS
	// Durable is block redis.durable: when an enqueue is acknowledged.
	Durable Durable
}

// Durable is block redis.durable: the durable enqueue mode. When on, an
// enqueue (by a worker, the scheduler, the HTTP API or ctl) is acknowledged
// only once Replicas replicas confirm its write within Timeout; otherwise
// its outcome is unknown (a 503 with the ids from the HTTP API) and the
// producer retries with the same ids (docs/semantics.md, "What an
// acknowledged enqueue survives").
type Durable struct {
	// Mode is "auto", "on" or "off" (redis.durable.mode). Default "auto":
	// on with Sentinel (redis.master_name), off for a standalone server
	// and for Cluster (a cluster need not have replicas: "on" waits per
	// shard, docs/semantics.md).
	Mode string
	// Replicas is how many replicas must confirm (redis.durable.replicas).
	// Default 1.
	Replicas int
	// Timeout bounds the wait for them (redis.durable.timeout), in whole
	// milliseconds, below 4.5s (the client's read timeout less 0.5s).
	// Default 500ms.
	Timeout time.Duration
	// AOF also waits for the fsync of the append-only file on the master
	// and the replicas (redis.durable.aof; WAITAOF, Redis 7.2 or later).
	// Default false.
	AOF bool
}

// TLS is a tls block (zookeeper.tls, redis.tls).
type TLS struct {
	// Enabled turns TLS on (…tls.enabled). Default false.
	Enabled bool
	// CAFile is a PEM bundle of the CAs to trust (…tls.ca_file). Default:
	// the system's roots.
	CAFile string
	// CertFile and KeyFile are a client certificate and its key, PEM
	// (…tls.cert_file, …tls.key_file). Default: none.
	CertFile string
	KeyFile  string
	// ServerName overrides the name checked in the server's certificate
	// (…tls.server_name). Default: the host being dialled.
	ServerName string
	// InsecureSkipVerify disables certificate checks
	// (…tls.insecure_skip_verify); for tests only. Default false.
	InsecureSkipVerify bool
}

// Worker is block worker: this member of the fleet.
type Worker struct {
	// Name is the stable member name (worker.name); a restarted worker with
	// the same name gets its queues back. Default: the host name.
	Name string
	// Capacity is how many tasks run at once (worker.capacity); it is also
	// the member's weight in balancing. Default 16.
	Capacity int
	// Tags are this member's tags (worker.tags); a queue with tags is only
	// owned by members carrying all of them. Default none.
	Tags []string
	// AdminAddr is where the admin HTTP server listens (worker.admin_addr):
	// /healthz, /readyz, /metrics, /debug/state. "off" disables it.
	// Default "127.0.0.1:9090".
	AdminAddr string
	// DrainTimeout bounds how long in-flight tasks may run on after the
	// worker stops or gives its queues up (worker.drain_timeout); then they
	// are killed. A queue moved by a rebalance while the worker runs on
	// waits for its tasks' own timeouts instead. Default 30s.
	DrainTimeout time.Duration
	// BatchSize is how many messages one read fetches (worker.batch_size).
	// Default 100.
	BatchSize int
	// Strategy is the assignment strategy used while this member leads the
	// rebalance (worker.strategy): sticky, range or round-robin. Default
	// sticky.
	Strategy string
	// Settle is how long the rebalance leader waits for membership to settle
	// before computing a new assignment (worker.settle). Default 250ms.
	Settle time.Duration
	// BalanceEvery paces the rebalance leader's corrections of balance
	// after queues were removed (retired keys, `queue rm`): at most one
	// bounded correction, moving idle queues, per BalanceEvery
	// (worker.balance_every). Shorter restores balance sooner after a
	// burst of retirements; each correction asks Redis about a few
	// batches of queues and may move some. Default 10s.
	BalanceEvery time.Duration
	// RedisGiveUpAfter is how long this member's Redis may go unanswered
	// before the member gives its queues up to the members that can reach
	// Redis (worker.redis_giveup_after); when no member can, nothing moves.
	// Default 10s, about one session timeout.
	RedisGiveUpAfter time.Duration
}

// Scheduler is block scheduler: the periodic-job leader loop.
type Scheduler struct {
	// AdminAddr is where `drover scheduler` serves /healthz, /readyz and
	// /metrics (scheduler.admin_addr); "off" disables it. A worker started
	// with --scheduler uses worker.admin_addr instead. Default
	// "127.0.0.1:9091": its own port, so that a worker and a scheduler on
	// one host can share one configuration file.
	AdminAddr string
	// PollInterval is the longest the leader sleeps between two looks at the
	// schedule index (scheduler.poll_interval). Default 1s.
	PollInterval time.Duration
	// MisfireGrace is how late a slot may fire and still count as on time
	// (scheduler.misfire_grace). Default 1m.
	MisfireGrace time.Duration
	// CatchupLimit is the most missed slots catchup "all" fires for one
	// entry (scheduler.catchup_limit). Default 1000.
	CatchupLimit int
}

// Metrics is block metrics.
type Metrics struct {
	// Prometheus serves /metrics on the admin address (metrics.prometheus).
	// Default true.
	Prometheus bool
	// Statsd is the host:port of a statsd server to send metrics to
	// (metrics.statsd). Default: none.
	Statsd string
	// Groups are queue-name globs whose queues share one "group" label
	// (metrics.groups; docs/metrics.md, "The budget"). Default: none.
	Groups []string
	// MaxGroups bounds the distinct groups exported (metrics.max_groups).
	// Default 50.
	MaxGroups int
	// Detail chooses the queues whose backlog gauges carry a queue label
	// (metrics.detail.*). Zero fields take metrics.DetailConfig's defaults.
	Detail MetricsDetail
}

// MetricsDetail is block metrics.detail.
type MetricsDetail struct {
	TopOldest      int           // metrics.detail.top_oldest, default 10
	TopLagging     int           // metrics.detail.top_lagging, default 10
	OldestAgeAbove time.Duration // metrics.detail.oldest_age_above, default 5m
	LagAbove       int           // metrics.detail.lag_above, default 10000
	Max            int           // metrics.detail.max, default 100
}

// Scaler is block scaler: `drover scaler`, the KEDA external scaler, and
// the fleet-wide autoscaling figures (docs/operations.md, "Autoscaling").
type Scaler struct {
	// Addr is where the gRPC external scaler listens (scaler.addr). An
	// address beyond loopback needs mutual TLS (scaler.tls with ca_file).
	// Default "127.0.0.1:9093".
	Addr string
	// AdminAddr serves /healthz and /metrics (scaler.admin_addr); "off"
	// disables it. Default "127.0.0.1:9094".
	AdminAddr string
	// PollInterval is the longest an idle StreamIsActive waits before
	// measuring again without an enqueue wake-up (scaler.poll_interval).
	// Default 1s.
	PollInterval time.Duration
	// TargetLag is the lag one worker should keep up with, for the gauges
	// and `drover ctl status` (scaler.target_lag). KEDA's ScaledObjects
	// set their own in metadata. Default 100.
	TargetLag int
	// Selections are the queue selections (a name or a glob each) whose
	// fleet-wide gauges the scaler exports (scaler.selections). Default
	// none.
	Selections []string
	// TLS is block scaler.tls: cert_file and key_file are the server's
	// certificate; ca_file, the CAs whose client certificates are
	// accepted (required beyond loopback).
	TLS TLS
}

// Tracing is block tracing: OpenTelemetry traces of enqueues and tasks,
// sent to an OTLP collector (docs/operations.md, "Tracing").
type Tracing struct {
	// Enabled turns tracing on (tracing.enabled). Default false: no span is
	// recorded and no trace header is written.
	Enabled bool
	// Endpoint is the OTLP/gRPC collector's host:port (tracing.endpoint).
	// Default: the exporter's own default or OTEL_EXPORTER_OTLP_ENDPOINT.
	Endpoint string
	// Insecure sends without TLS (tracing.insecure). Default false.
	Insecure bool
	// SampleRatio is the share of new traces recorded, 0 to 1
	// (tracing.sample_ratio); a task whose producer sampled its trace is
	// always recorded. Default 1.
	SampleRatio float64
	// ServiceName is the resource's service.name (tracing.service_name).
	// Default "drover".
	ServiceName string
}

// Log is block log.
type Log struct {
	// Level is trace, debug, info, warn or error (log.level). Default info.
	Level string
	// JSON writes one JSON object per line (log.json). Default false.
	JSON bool
}

// Auth is block auth: who may use the HTTP surfaces (the web console and
// its API, and the debug endpoints of workers and schedulers).
type Auth struct {
	// Tokens are "name:role:sha256:<hex>" (auth.tokens); roles viewer,
	// producer, operator, admin. Only the token's SHA-256 is stored; `drover
	// web token NAME ROLE` makes one. Default none: the console listens on
	// loopback only and debug endpoints answer loopback clients only.
	Tokens []string
	// SessionKey signs browser sessions and CSRF tokens (auth.session_key);
	// give every console server behind one address the same key. Default:
	// a random key per process.
	SessionKey string
}

// Web is block web: the `drover web` console and HTTP API.
type Web struct {
	// Addr is where the console listens (web.addr). Default
	// "127.0.0.1:8080". A non-loopback address needs auth.tokens.
	Addr string
	// TLSCert and TLSKey are PEM files (web.tls_cert, web.tls_key); when
	// both are set the console serves HTTPS and its cookies are Secure.
	TLSCert string
	TLSKey  string
	// SessionTTL is how long a browser login lasts (web.session_ttl).
	// Default 12h.
	SessionTTL time.Duration
	// PublicName is the host name browsers use to reach the console
	// (web.public_name), when it is neither a loopback address, localhost
	// nor the host of web.addr. Without tokens the console refuses every
	// other Host (DNS rebinding). Default none.
	PublicName string
}

// Ctl is block ctl: how `drover ctl` authenticates to HTTP surfaces.
type Ctl struct {
	// Token is sent as a bearer token to workers' debug endpoints by `ctl
	// dump` (ctl.token; prefer DROVER_CTL_TOKEN). Default none.
	Token string
}

// Default returns the configuration with every default applied. hostname is
// the default worker name.
func Default(hostname string) *Config {
	return &Config{
		Cluster: DefaultCluster,
		ZooKeeper: ZooKeeper{
			Servers:        []string{DefaultZooKeeper},
			SessionTimeout: DefaultSessionTimeout,
		},
		Redis: Redis{
			Addrs:  []string{DefaultRedis},
			Prefix: DefaultRedisPrefix,
			Durable: Durable{
				Mode:     DefaultDurableMode,
				Replicas: DefaultDurableReplicas,
				Timeout:  DefaultDurableTimeout,
			},
		},
		Worker: Worker{
			Name:         hostname,
			Capacity:     DefaultCapacity,
			AdminAddr:    DefaultAdminAddr,
			DrainTimeout: DefaultDrainTimeout,
			BatchSize:    DefaultBatchSize,
			Strategy:     DefaultStrategy,
			Settle:       DefaultSettle,
			BalanceEvery: DefaultBalanceEvery,

			RedisGiveUpAfter: DefaultRedisGiveUpAfter,
		},
		Scheduler: Scheduler{
			AdminAddr:    DefaultSchedulerAdminAddr,
			PollInterval: DefaultPollInterval,
			MisfireGrace: DefaultMisfireGrace,
			CatchupLimit: DefaultCatchupLimit,
		},
		Metrics: Metrics{Prometheus: true},
		Log:     Log{Level: DefaultLogLevel},
		Web:     Web{Addr: DefaultWebAddr, SessionTTL: DefaultSessionTTL},
		Scaler: Scaler{
			Addr:         DefaultScalerAddr,
			AdminAddr:    DefaultScalerAdmin,
			PollInterval: DefaultScalerPoll,
			TargetLag:    DefaultTargetLag,
		},
		Tracing: Tracing{SampleRatio: DefaultSampleRatio, ServiceName: DefaultTracingService},
	}
}

// finish fills in the defaults that depend on other fields.
func (c *Config) finish() {
	if c.ZooKeeper.Root == "" {
		c.ZooKeeper.Root = "/drover/" + c.Cluster
	}
	if c.ZooKeeper.ConnectTimeout == 0 {
		c.ZooKeeper.ConnectTimeout = c.ZooKeeper.SessionTimeout
	}
}

// AdminEnabled reports whether the admin HTTP server should listen.
func (w Worker) AdminEnabled() bool { return w.AdminAddr != "" && w.AdminAddr != "off" }

// AdminEnabled reports whether the scheduler's admin HTTP server should
// listen.
func (s Scheduler) AdminEnabled() bool { return s.AdminAddr != "" && s.AdminAddr != "off" }
