package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/metrics"
	"github.com/drover-dev/drover/queue"
)

// adminServer is the admin HTTP server as a run-group actor.
type adminServer struct {
	addr string
	ln   net.Listener
	srv  *http.Server
}

// adminFDEnv names the listening socket a parent process handed down for
// the admin server: `drover dev` binds each child's admin port itself and
// passes the socket (exec.Cmd.ExtraFiles), so that no other process can take
// the port between choosing it and the child listening on it. It is not a
// setting: only dev sets it, in its children's environment.
const adminFDEnv = "DROVER_DEV_ADMIN_FD"

// newAdminServer listens on addr, the value of the setting key; "off" (or
// "") disables it and returns nil. A socket handed down in adminFDEnv is
// used instead of addr (once: the variable is cleared, so task children do
// not see it).
func newAdminServer(key, addr string, h http.Handler) (*adminServer, error) {
	a, err := listenAdmin(key, addr)
	if a != nil {
		a.srv.Handler = h
	}
	return a, err
}

// listenAdmin is newAdminServer without the handler, for a process whose
// handler needs what is built after the address is known (the worker's
// member node names it): set a.srv.Handler before serve.
func listenAdmin(key, addr string) (*adminServer, error) {
	if addr == "" || addr == "off" {
		return nil, nil
	}
	ln, err := inheritedListener()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	if ln == nil {
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("%s: listen: %w", key, err)
		}
	}
	return &adminServer{addr: ln.Addr().String(), ln: ln, srv: &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: 5 * time.Second}}, nil
}

// inheritedListener returns the socket named by adminFDEnv, or nil when the
// variable is not set.
func inheritedListener() (net.Listener, error) {
	v, ok := os.LookupEnv(adminFDEnv)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(adminFDEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: want a file descriptor ≥ 3", adminFDEnv, v)
	}
	f := os.NewFile(uintptr(fd), "admin-listener")
	defer f.Close() // FileListener holds its own duplicate
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("listen on the socket handed down in %s=%d: %w", adminFDEnv, fd, err)
	}
	return ln, nil
}

func (a *adminServer) serve() error {
	if err := a.srv.Serve(a.ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("admin http: %w", err)
	}
	return nil
}

func (a *adminServer) interrupt(error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	a.srv.Shutdown(ctx)
}

// debugGuard returns the wrapper of an admin listener's debug endpoints:
// with auth.tokens configured they need an operator (or admin) bearer
// token; without, only loopback clients reach them, and only with a Host
// that is a loopback address, localhost or the admin address (DNS
// rebinding; docs/operations.md, "The admin endpoints").
func debugGuard(cfg *config.Config) (func(http.Handler) http.Handler, error) {
	g, err := auth.NewGuard(cfg.Auth.Tokens, cfg.Worker.AdminAddr, cfg.Scheduler.AdminAddr)
	if err != nil {
		return nil, err
	}
	return g.Wrap, nil
}

// openStoreAndMetrics opens the queue store (openStore) and the metrics
// registry (setupMetrics) of a process that serves beside the fleet;
// closeAll closes both.
func openStoreAndMetrics(cfg *config.Config, clientName string, log hclog.Logger) (store *queue.Store, reg *metrics.Registry, closeAll func(), err error) {
	store, closeStore, err := openStore(cfg, clientName, log)
	if err != nil {
		return nil, nil, nil, err
	}
	if reg, err = setupMetrics(cfg, log); err != nil {
		closeStore()
		return nil, nil, nil, err
	}
	return store, reg, func() { reg.Close(); closeStore() }, nil
}

// setupMetrics builds the process's metrics registry from the metrics block.
func setupMetrics(cfg *config.Config, log hclog.Logger) (*metrics.Registry, error) {
	reg, err := metrics.Setup(metrics.SetupConfig{
		Prometheus: cfg.Metrics.Prometheus, Statsd: cfg.Metrics.Statsd, Inmem: true, Logger: log.Named("metrics"),
		Groups: cfg.Metrics.Groups, MaxGroups: cfg.Metrics.MaxGroups,
		Detail: metrics.DetailConfig{
			TopOldest: cfg.Metrics.Detail.TopOldest, TopLagging: cfg.Metrics.Detail.TopLagging,
			OldestAgeAbove: cfg.Metrics.Detail.OldestAgeAbove, LagAbove: int64(cfg.Metrics.Detail.LagAbove),
			Max: cfg.Metrics.Detail.Max,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return reg, nil
}

// readyTimeout bounds the Redis ping of a /readyz probe.
const readyTimeout = time.Second

// readyWithRedis is a /readyz check: zk's (the ZooKeeper session and
// membership), then a Redis ping bounded by readyTimeout, so that a
// process that cannot reach Redis is taken out of rotation too.
func readyWithRedis(zk func() error, ping func(context.Context) error) error {
	if err := zk(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := ping(ctx); err != nil {
		return fmt.Errorf("Redis does not answer: %w", err)
	}
	return nil
}
