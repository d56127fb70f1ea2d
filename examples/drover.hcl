# drover.hcl — a commented configuration for `drover worker` and
# `drover scheduler` (and `drover ctl`, which reads the same file).
#
# Precedence: flags win over DROVER_* environment variables, which win over
# this file, which wins over the defaults. Every key has a variable: the key
# in upper case with dots as underscores, e.g. worker.admin_addr is
# DROVER_WORKER_ADMIN_ADDR. Check a file with `drover config check -c FILE`;
# list every key with `drover config keys`. Durations are strings ("10s").

# The fleet's name; the ZooKeeper root defaults to /drover/<cluster>.
cluster = "prod"

zookeeper {
  servers         = ["zk1:2181", "zk2:2181", "zk3:2181"]
  # root          = "/drover/prod"
  session_timeout = "10s"  # a worker that loses ZooKeeper gives its queues up after 2/3 of it
  # connect_timeout = "10s" # default: session_timeout; `drover ctl` exits 4 after it
  # auth = "drover:secret" # digest ACLs; prefer DROVER_ZOOKEEPER_AUTH
  tls {
    enabled = false
    # ca_file   = "/etc/drover/zk-ca.pem"
    # cert_file = "/etc/drover/zk-client.pem"
    # key_file  = "/etc/drover/zk-client.key"
  }
}

redis {
  addrs  = ["redis:6379"]  # several addresses without master_name: Redis Cluster
  # master_name = "mymaster" # Sentinel: addrs are then the Sentinels
  # username = "drover"
  # password: set DROVER_REDIS_PASSWORD instead of writing it here
  db     = 0
  prefix = "drover"
  tls {
    enabled = false
  }
}

worker {
  # name = "worker-a"      # stable member name; default: the host name
  capacity      = 16       # tasks at once; also this member's weight
  tags          = []       # queues with tags go only to members with all of them
  admin_addr    = "127.0.0.1:9090" # /healthz /readyz /metrics /debug/state; "off" disables
  drain_timeout = "30s"    # in-flight tasks may finish this long when a queue moves
  batch_size    = 100
  strategy      = "sticky" # sticky | range | round-robin
  settle        = "250ms"  # coalesce membership changes (rolling deploys)
  redis_giveup_after = "6s"  # Redis silent this long: this member's queues go to the others
}

scheduler {
  admin_addr    = "127.0.0.1:9091" # `drover scheduler`'s /healthz /readyz /metrics: not the worker's port
  poll_interval = "1s"
  misfire_grace = "1m"
  catchup_limit = 1000
}

metrics {
  prometheus = true        # serve /metrics on the admin address
  # statsd   = "127.0.0.1:8125"
}

# OpenTelemetry traces of enqueues and tasks (docs/operations.md, "Tracing").
# tracing {
#   enabled      = true
#   endpoint     = "127.0.0.1:4317"   # an OTLP/gRPC collector
#   insecure     = true
#   sample_ratio = 1                  # new traces; producers' sampled traces are always kept
# }

# drover scaler: KEDA's external scaler and the autoscaling gauges
# (docs/operations.md, "Autoscaling").
# scaler {
#   addr        = "127.0.0.1:9093"    # beyond loopback: mutual TLS (tls { … ca_file })
#   target_lag  = 100                 # per worker; also ctl status's WORKERS NEEDED
#   selections  = ["emails-*"]        # one drover_autoscale_* gauge set each
# }

log {
  level = "info"           # trace | debug | info | warn | error
  json  = false
}

# Who may use the HTTP surfaces: the web console (drover web) and the
# workers' debug endpoints. Without tokens the console listens on loopback
# only and debug endpoints answer loopback clients only. Make a token with
# `drover web token NAME ROLE` (viewer | producer | operator | admin).
auth {
  # tokens      = ["alice:operator:sha256:…"]
  # session_key = "…"        # the same on every console server; prefer DROVER_AUTH_SESSION_KEY
}

web {
  addr        = "127.0.0.1:8080"
  # tls_cert  = "/etc/drover/tls/console.pem"
  # tls_key   = "/etc/drover/tls/console.key"
  session_ttl = "12h"
}

# ctl {
#   token = "drv_…"          # sent by `drover ctl dump`; prefer DROVER_CTL_TOKEN
# }
