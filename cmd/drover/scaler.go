package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	rungroup "github.com/oklog/run"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/internal/zksession"
	"github.com/drover-dev/drover/metrics"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/scaler"
	pb "github.com/drover-dev/drover/scaler/externalscaler"
)

func (a *app) scalerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scaler",
		Short: "Serve KEDA's external scaler (gRPC) and the fleet-wide autoscaling gauges",
		Long: `Serve KEDA's external scaler contract (IsActive, StreamIsActive,
GetMetricSpec, GetMetrics) on scaler.addr, and /metrics with one
drover_autoscale_* gauge set per selection of scaler.selections on
scaler.admin_addr. A ScaledObject's trigger metadata selects queues (queues,
prefix, glob) and sets targetLag, activationLag and targetOldestAgeSeconds;
docs/operations.md ("Autoscaling") has the recipes. An address beyond
loopback needs mutual TLS (scaler.tls).`,
		Example: `  drover scaler -c /etc/drover/drover.hcl
  drover scaler --listen 127.0.0.1:9093 --set scaler.selections=emails-*`,
		Args: noArgs,
		RunE: a.processRun(func(ctx context.Context, cfg *config.Config) error { return runScaler(ctx, cfg, nil) }),
	}
	a.settingFlag(cmd.Flags(), "listen", "scaler.addr", "gRPC address of the external scaler")
	a.settingFlag(cmd.Flags(), "metrics-addr", "scaler.admin_addr", `address of /healthz and /metrics ("off" disables it)`)
	return cmd
}

// runScaler serves until ctx ends. ready, when not nil, receives the gRPC
// and admin addresses once both listen (tests use it with port 0).
func runScaler(ctx context.Context, cfg *config.Config, ready func(grpcAddr, adminAddr string)) error {
	log := cfg.Logger("drover", os.Stderr).Named("scaler")
	store, reg, closeAll, err := openStoreAndMetrics(cfg, "drover-scaler", log)
	if err != nil {
		return err
	}
	defer closeAll()
	fleet, err := newScalerFleet(cfg, store, log.Named("zk"))
	if err != nil {
		return err
	}
	defer fleet.close()
	srv, err := scaler.New(scaler.Config{
		Fleet: fleet, Wakeups: store.Listener().AllWakeups, PollInterval: cfg.Scaler.PollInterval, Logger: log,
	})
	if err != nil {
		return err
	}
	var opts []grpc.ServerOption
	if cfg.Scaler.TLS.Enabled {
		tc, err := scalerTLS(cfg.Scaler.TLS)
		if err != nil {
			return err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
	}
	gs := grpc.NewServer(opts...)
	pb.RegisterExternalScalerServer(gs, srv)
	ln, err := net.Listen("tcp", cfg.Scaler.Addr)
	if err != nil {
		return fmt.Errorf("scaler.addr: listen: %w", err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	if h := reg.Handler(); h != nil {
		mux.Handle("GET /metrics", h)
	}
	admin, err := newAdminServer("scaler.admin_addr", cfg.Scaler.AdminAddr, mux)
	if err != nil {
		ln.Close()
		return err
	}

	var g rungroup.Group
	g.Add(func() error { return gs.Serve(ln) }, func(error) { gs.Stop() })
	adminAddr := ""
	if admin != nil {
		adminAddr = admin.addr
		g.Add(admin.serve, admin.interrupt)
	}
	{ // enqueue wake-ups reach the open StreamIsActive calls
		rctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error { return srv.Run(rctx) }, func(error) { cancel() })
	}
	{ // the fleet-wide gauges of scaler.selections
		gctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error { publishAutoscaleGauges(gctx, cfg, fleet, reg, log); return nil }, func(error) { cancel() })
	}
	g.Add(func() error { <-ctx.Done(); return nil }, func(error) {})
	log.Info("scaler serving", "grpc", ln.Addr().String(), "admin", adminAddr, "tls", cfg.Scaler.TLS.Enabled)
	if ready != nil {
		ready(ln.Addr().String(), adminAddr)
	}
	return g.Run()
}

// scalerTLS is the server side of mutual TLS: the scaler's certificate, and
// client certificates required from the CAs of ca_file when it is set.
func scalerTLS(t config.TLS) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("scaler.tls: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("scaler.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("scaler.tls.ca_file: no PEM certificate in %s", t.CAFile)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// autoscaleGaugeInterval is how often the scaler publishes the gauges.
const autoscaleGaugeInterval = 5 * time.Second

// publishAutoscaleGauges sets the drover_autoscale_* gauges of every
// configured selection until ctx ends.
func publishAutoscaleGauges(ctx context.Context, cfg *config.Config, f scaler.Fleet, rec metrics.Recorder, log hclog.Logger) {
	if len(cfg.Scaler.Selections) == 0 {
		<-ctx.Done()
		return
	}
	target := int64(cfg.Scaler.TargetLag)
	t := time.NewTicker(autoscaleGaugeInterval)
	defer t.Stop()
	for {
		for _, p := range cfg.Scaler.Selections {
			sel, err := scaler.NewSelection(p)
			if err != nil {
				log.Warn("scaler.selections", "selection", p, "error", err)
				continue
			}
			mctx, cancel := context.WithTimeout(ctx, autoscaleGaugeInterval)
			fig, err := scaler.Measure(mctx, f, sel)
			cancel()
			if err != nil && !errors.Is(err, scaler.ErrNoQueues) {
				log.Warn("measure selection", "selection", p, "error", err)
				continue
			}
			l := metrics.L("selection", sel.String())
			rec.SetGauge(metrics.AutoscaleLag, float32(fig.Lag), l)
			rec.SetGauge(metrics.AutoscaleQueuesWithLag, float32(fig.QueuesWithLag), l)
			rec.SetGauge(metrics.AutoscaleOldestAge, float32(fig.OldestAge.Seconds()), l)
			rec.SetGauge(metrics.AutoscaleWorkersNeeded, float32(fig.WorkersNeeded(target)), l, metrics.L("target_lag", strconv.FormatInt(target, 10)))
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// scalerFleet is scaler.Fleet over ZooKeeper (configured queues, committed
// offsets) and Redis (enqueued-to queues, logs). Its ZooKeeper session is
// the Keeper's: made on the first call, made again on the call after a loss.
type scalerFleet struct {
	zk    *zksession.Keeper
	store *queue.Store
}

var _ scaler.Fleet = (*scalerFleet)(nil)

// newScalerFleet returns the fleet of cfg's ZooKeeper and store; it
// connects on its first call. Close it with close.
func newScalerFleet(cfg *config.Config, store *queue.Store, log hclog.Logger) (*scalerFleet, error) {
	cc, err := cfg.Coordinator(log)
	if err != nil {
		return nil, err
	}
	zs, err := zksession.Dial(cc, zksession.Config{Logger: log})
	if err != nil {
		return nil, err
	}
	return &scalerFleet{zk: zs, store: store}, nil
}

func (f *scalerFleet) close() { f.zk.Close() }

// Queues returns the queues the fleet lists (ops.ListQueueNames).
func (f *scalerFleet) Queues(ctx context.Context) ([]string, error) {
	s, err := f.zk.Session(ctx)
	if err != nil {
		return nil, err
	}
	names, _, err := ops.ListQueueNames(ctx, s, f.store)
	return names, err
}

// Backlogs measures the queues after their committed offsets (0 when a
// queue has none yet). Lag after any offset is zero for an empty log, so
// only the queues whose log holds a message (one pipelined EXISTS each) are
// measured: their offsets in pipelined ZooKeeper reads, their backlogs in
// one Redis pipeline. An idle queue costs one EXISTS a poll.
func (f *scalerFleet) Backlogs(ctx context.Context, qs []string) ([]drover.Backlog, error) {
	nonEmpty, err := f.store.Inspector().NonEmpty(ctx, qs)
	if err != nil {
		return nil, err
	}
	var busy []string
	var at []int
	for i, ok := range nonEmpty {
		if ok {
			busy, at = append(busy, qs[i]), append(at, i)
		}
	}
	out := make([]drover.Backlog, len(qs))
	if len(busy) == 0 {
		return out, nil
	}
	s, err := f.zk.Session(ctx)
	if err != nil {
		return nil, err
	}
	offs, err := s.Claims().Offsets(ctx, busy)
	if err != nil {
		return nil, err
	}
	positions := make([]drover.Position, len(busy))
	for i, o := range offs {
		positions[i] = o.Offset.Position
	}
	bs, errs := f.store.Log().BacklogMany(ctx, busy, positions)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for k, b := range bs {
		out[at[k]] = b
	}
	return out, nil
}
