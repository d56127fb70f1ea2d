package scaler_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/scaler"
	pb "github.com/drover-dev/drover/scaler/externalscaler"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// storeFleet is a Fleet over a real queue store whose committed offsets are
// all 0 (nothing processed) and whose queue list the benchmark sets.
type storeFleet struct {
	store  *queue.Store
	queues []string
}

func (f *storeFleet) Queues(context.Context) ([]string, error) { return f.queues, nil }
func (f *storeFleet) Backlogs(ctx context.Context, qs []string) ([]drover.Backlog, error) {
	bs, errs := f.store.Log().BacklogMany(ctx, qs, make([]drover.Position, len(qs)))
	return bs, errors.Join(errs...)
}

// BenchmarkStreamPush measures, as KEDA sees it over gRPC, the time from an
// Enqueue call to the StreamIsActive push of "active" for a selection
// that was idle: with enqueue wake-ups (the normal path) and with polling
// only (a lost wake-up; the default 1 s poll).
func BenchmarkStreamPush(b *testing.B) {
	for _, c := range []struct {
		name    string
		wakeups bool
		cycles  int
	}{{"wakeup", true, 40}, {"poll-only", false, 5}} {
		b.Run(c.name, func(b *testing.B) {
			rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{testenv.Redis(b).Addr}})
			if err != nil {
				b.Fatal(err)
			}
			defer rdb.Close()
			store, err := queue.New(queue.Config{Client: rdb, Prefix: testenv.Prefix(b)})
			if err != nil {
				b.Fatal(err)
			}
			fleet := &storeFleet{store: store}
			cfg := scaler.Config{Fleet: fleet}
			if c.wakeups {
				cfg.Wakeups = store.Listener().AllWakeups
			}
			srv, err := scaler.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go srv.Run(ctx)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			gs := grpc.NewServer()
			pb.RegisterExternalScalerServer(gs, srv)
			go gs.Serve(ln)
			defer gs.Stop()
			conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			cl := pb.NewExternalScalerClient(conn)

			var lat []float64
			for i := 0; i < b.N; i++ {
				for j := 0; j < c.cycles; j++ {
					q := fmt.Sprintf("push-%d-%d", i, j)
					fleet.queues = append(fleet.queues[:0], q)
					sctx, stop := context.WithCancel(ctx)
					st, err := cl.StreamIsActive(sctx, &pb.ScaledObjectRef{ScalerMetadata: map[string]string{scaler.KeyQueues: q}})
					if err != nil {
						b.Fatal(err)
					}
					if r, err := st.Recv(); err != nil || r.Result {
						b.Fatalf("want a first push of inactive, have %v, %v", r, err)
					}
					start := time.Now()
					if _, err := store.Producer().Enqueue(ctx, &drover.Message{Queue: q, Task: "t"}); err != nil {
						b.Fatal(err)
					}
					if r, err := st.Recv(); err != nil || !r.Result {
						b.Fatalf("want a push of active, have %v, %v", r, err)
					}
					lat = append(lat, float64(time.Since(start).Microseconds())/1000)
					stop()
				}
			}
			slices.Sort(lat)
			b.ReportMetric(lat[len(lat)/2], "p50-ms")
			b.ReportMetric(lat[len(lat)*99/100], "p99-ms")
			b.ReportMetric(lat[len(lat)-1], "max-ms")
		})
	}
}
