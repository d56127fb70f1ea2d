package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	rungroup "github.com/oklog/run"
	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/internal/zksession"
	"github.com/drover-dev/drover/jobs"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/web"
)

func (a *app) webCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "web",
		Short: "Serve the web console and the HTTP API (/api/v1)",
		Long: `Serve the operator console (overview, queues, one queue's messages, members,
schedules, audit log) and its JSON API under /api/v1, over ZooKeeper and
Redis. The server keeps no state of its own: run as many as you like
(give them the same auth.session_key so that a browser session works on
all of them).

Authentication: tokens in auth.tokens (name:role:sha256:<hex>, roles
viewer, producer, operator, admin; make one with 'drover web token'). With
no tokens it listens on loopback only and every local client is admin; it
refuses a non-loopback web.addr without tokens. With web.tls_cert and
web.tls_key it serves HTTPS. /healthz and /readyz answer without
authentication, for probes.`,
		Example: `  drover web                                  # http://127.0.0.1:8080, loopback only
  drover web --addr 0.0.0.0:8080 -c /etc/drover/drover.hcl   # needs auth.tokens
  drover web token alice operator             # a token and its auth.tokens line`,
		Args: noArgs,
		RunE: a.processRun(func(ctx context.Context, cfg *config.Config) error { return runWeb(ctx, cfg, a.stderr, nil) }),
	}
	f := cmd.Flags()
	a.settingFlag(f, "addr", "web.addr", "listen address host:port")
	a.settingFlag(f, "tls-cert", "web.tls_cert", "TLS certificate (PEM)")
	a.settingFlag(f, "tls-key", "web.tls_key", "TLS key (PEM)")
	cmd.AddCommand(a.webTokenCommand())
	return cmd
}

func (a *app) webTokenCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "token NAME ROLE",
		Short: "Make a random token and print it with its auth.tokens line",
		Long: `Print a new random token for NAME with ROLE (viewer, producer, operator or
admin), and the line to add to auth.tokens: only the token's SHA-256 is
stored in the configuration. Give the token to its holder; it is not
shown again.`,
		Example: `  drover web token alice operator`,
		Args:    exactArgs(2, "NAME ROLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			role, err := auth.ParseRole(args[1])
			if err != nil {
				return usageError{err}
			}
			tok, spec, err := auth.NewToken(args[0], role)
			if err != nil {
				return usageError{err}
			}
			asJSON, err := a.jsonOutput()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, map[string]string{"name": args[0], "role": role.String(), "token": tok, "spec": spec})
			}
			fmt.Fprintf(a.stdout, "token:  %s\nconfig: auth { tokens = [%q] }\nenv:    DROVER_AUTH_TOKENS=%s\n", tok, spec, spec)
			return nil
		},
	}
}

// runWeb serves the console until ctx ends. It outlives ZooKeeper blips:
// a lost session is renewed (webSession: zksession.Keeper.Keep), and meanwhile what needs
// ZooKeeper is answered 503 naming it. ready, when not nil, receives the
// console's URL once it listens.
func runWeb(ctx context.Context, cfg *config.Config, stderr io.Writer, ready func(url string)) error {
	log := cfg.Logger("drover", os.Stderr).Named("web")
	tls := cfg.Web.TLSCert != "" && cfg.Web.TLSKey != ""
	authCfg := auth.Config{Tokens: cfg.Auth.Tokens, SessionKey: cfg.Auth.SessionKey, SessionTTL: cfg.Web.SessionTTL, SecureCookies: tls,
		Hosts: []string{cfg.Web.Addr, cfg.Web.PublicName}}
	authn, err := auth.New(authCfg) // the configuration's errors before any connection
	if err != nil {
		return usageError{err}
	}
	if err := authn.CheckListen(cfg.Web.Addr); err != nil {
		return usageError{fmt.Errorf("web.addr: %w", err)}
	}
	store, closeStore, err := openStore(cfg, "drover-web", log)
	if err != nil {
		return err
	}
	defer closeStore()
	// Logged-out sessions are ended in Redis, for every console server
	// and across restarts.
	authCfg.Revocations = store.Sessions()
	if authn, err = auth.New(authCfg); err != nil {
		return usageError{err}
	}
	cc, err := cfg.Coordinator(log.Named("zk"))
	if err != nil {
		return err
	}
	opsOn := func(s *coordinator.Session) (*ops.Ops, error) {
		return ops.New(ops.Config{ZK: s, Store: store, Cluster: cfg.Cluster, MemberToken: cfg.Ctl.Token})
	}
	keeper, err := zksession.Dial(cc, zksession.Config{Logger: log.Named("zk")})
	if err != nil {
		return err
	}
	defer keeper.Close()
	zs := webSession{keeper}
	// The producer API and job status need only Redis: when ZooKeeper does
	// not answer at start the console serves them anyway, and the rest
	// answers 503 naming ZooKeeper until Keep connects (followSessions).
	cctx, cancel := context.WithTimeout(ctx, cfg.ZooKeeper.ConnectTimeout)
	sess, err := zs.Session(cctx)
	cancel()
	var o *ops.Ops
	if err != nil {
		log.Warn("ZooKeeper does not answer: serving the producer API and job status from Redis; the rest answers 503 until the session is up", "error", err)
		fmt.Fprintf(stderr, "drover web: ZooKeeper does not answer (%v): HTTP enqueues to known queues and job status are served; the rest answers 503 until it connects\n", err)
	} else if o, err = opsOn(sess); err != nil {
		return err
	}
	reg, err := setupMetrics(cfg, log)
	if err != nil {
		return err
	}
	defer reg.Close()
	srv, err := web.New(web.Config{Ops: o, Store: store, Auth: authn, Logger: log, Metrics: reg, RedisPing: store.Ping, ZooKeeper: zs.ready})
	if err != nil {
		return err
	}
	if err := srv.RouteJobs(liveJobsConfig(zs, store, cfg.Ctl.Token)); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Web.Addr)
	if err != nil {
		return fmt.Errorf("web.addr: listen: %w", err)
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	url := scheme + "://" + ln.Addr().String() + "/"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	if h := reg.Handler(); h != nil {
		mux.Handle("GET /metrics", h) // the producer API's counters (docs/web.md)
	}
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := zs.ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := store.Ping(ctx); err != nil {
			http.Error(w, "not ready: Redis does not answer: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.Handle("/", srv.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: web.MaxRequestHeaderBytes, ErrorLog: log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})}
	if authn.Open() {
		fmt.Fprintf(stderr, "drover web: no auth.tokens configured: listening on loopback only, every local client is admin\n")
	}
	fmt.Fprintf(stderr, "drover web: console at %s\n", url)
	log.Info("console listening", "url", url, "auth", map[bool]string{true: "open (loopback only)", false: "tokens"}[authn.Open()], "tls", tls)
	if ready != nil {
		ready(url)
	}

	var g rungroup.Group
	g.Add(func() error {
		var err error
		if tls {
			err = hs.ServeTLS(ln, cfg.Web.TLSCert, cfg.Web.TLSKey)
		} else {
			err = hs.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("web: %w", err)
		}
		return nil
	}, func(error) {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	})
	rctx, rcancel := context.WithCancel(context.Background())
	g.Add(func() error { return srv.Run(rctx) }, func(error) { rcancel() })
	zctx, zcancel := context.WithCancel(ctx)
	g.Add(func() error { return zs.Keep(zctx) }, func(error) { zcancel() })
	g.Add(func() error { return followSessions(zctx, keeper, sess, srv, opsOn) }, func(error) { zcancel() })
	return g.Run()
}

// followSessions gives srv an Ops on every session the keeper connects
// after cur (nil: none yet, drover web started while ZooKeeper was away),
// until ctx ends.
func followSessions(ctx context.Context, keeper *zksession.Keeper, cur *coordinator.Session, srv *web.Server, opsOn func(*coordinator.Session) (*ops.Ops, error)) error {
	for {
		s, err := keeper.Next(ctx, cur)
		if err != nil {
			return nil // ctx ended or the keeper closed: the console is stopping
		}
		if o, err := opsOn(s); err == nil { // the configuration is checked at start
			srv.SetOps(o)
		}
		cur = s
	}
}

// liveJobsConfig is jobsConfig through the session of the moment: job
// status and enqueues to queues Redis knows go on while ZooKeeper is away.
func liveJobsConfig(zs webSession, store *queue.Store, memberToken string) web.JobsConfig {
	return web.JobsConfig{
		Store:  store,
		Lookup: &jobs.Lookup{Store: store.Jobs(), Fleet: webFleet{zs}, Token: memberToken},
		Queues: ops.ConfigsFunc(func(ctx context.Context, q string) (coordinator.QueueEntry, error) {
			if err := zs.ready(); err != nil {
				return coordinator.QueueEntry{}, err
			}
			return zs.session().Queues().GetOrFamily(ctx, q) // a queue of a family takes its first enqueue
		}),
	}
}

// jobsConfig wires the console's job endpoints (status by id, HTTP
// producers) to the fleet's ZooKeeper session and queue store.
func jobsConfig(sess *coordinator.Session, store *queue.Store, memberToken string) web.JobsConfig {
	return web.JobsConfig{
		Store:  store,
		Lookup: &jobs.Lookup{Store: store.Jobs(), Fleet: jobs.SessionFleet{Session: sess}, Token: memberToken},
		Queues: sess.Queues(), // a queue of a family takes its first enqueue
	}
}
