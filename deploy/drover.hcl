# /etc/drover/drover.hcl — an example configuration for the systemd units
# (deploy/systemd). Every key is in docs/cli.md; DROVER_* environment
# variables and flags override the file. deploy/config_test.go loads this
# file, so it stays valid.
cluster = "prod"

zookeeper {
  servers = ["zk1.internal:2181", "zk2.internal:2181", "zk3.internal:2181"]
  # See docs/operations.md, "Choosing the session timeout".
  session_timeout = "10s"
}

redis {
  addrs  = ["redis.internal:6379"]
  prefix = "drover"
  # With Sentinel (deploy/redis/sentinel.conf), name the Sentinels and the
  # master; the durable enqueue mode is then on by default ("auto"): an
  # enqueue is acknowledged once 1 replica has it (docs/semantics.md,
  # "What an acknowledged enqueue survives").
  # addrs       = ["sentinel-1.internal:26379", "sentinel-2.internal:26379", "sentinel-3.internal:26379"]
  # master_name = "drover"
  # durable {
  #   mode     = "auto"   # on with Sentinel, off otherwise; or "on", "off"
  #   replicas = 1
  #   timeout  = "500ms"
  # }
}

worker {
  # name defaults to the host name: stable across restarts, so a restarted
  # worker gets its queues back.
  capacity   = 16
  # Prometheus and probes reach /metrics, /healthz and /readyz here; the
  # debug endpoints (/debug/state, /debug/pprof) answer loopback clients
  # only, or operator tokens once auth.tokens is set (docs/operations.md,
  # "The admin endpoints").
  admin_addr = "0.0.0.0:9090"
  # The systemd units' TimeoutStopSec is drain_timeout + 15s: keep them in
  # step when changing this.
  drain_timeout = "30s"
}

scheduler {
  # Its own port: a worker and a scheduler on one host share this file.
  admin_addr = "0.0.0.0:9091"
}

metrics {
  prometheus = true
  # statsd = "127.0.0.1:8125"
  # The budget (docs/metrics.md): counters and histograms by queue group,
  # per-queue backlog gauges only for the queues that matter. A queue's
  # group is the first matching glob, else its name up to the first ':'.
  # groups     = ["tenant-*"]
  # max_groups = 50
  # detail {
  #   top_oldest       = 10
  #   top_lagging      = 10
  #   oldest_age_above = "5m"
  #   lag_above        = 10000
  #   max              = 100
  # }
}

log {
  level = "info"
  json  = true
}
