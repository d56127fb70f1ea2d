package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/scaler"
	pb "github.com/drover-dev/drover/scaler/externalscaler"
)

// startScaler runs the scaler in process against the cluster (extra
// settings as KEY=VALUE environment variables) and returns a client that
// speaks to it as KEDA does.
func (c *cluster) startScaler(env ...string) pb.ExternalScalerClient {
	c.t.Helper()
	cl, _ := c.startScalerAdmin(env...)
	return cl
}

// startScalerAdmin is startScaler that also returns the admin address
// (empty unless DROVER_SCALER_ADMIN_ADDR is among env).
func (c *cluster) startScalerAdmin(env ...string) (pb.ExternalScalerClient, string) {
	c.t.Helper()
	env = append([]string{"DROVER_SCALER_ADDR=127.0.0.1:0", "DROVER_SCALER_ADMIN_ADDR=off", "DROVER_LOG_LEVEL=warn"}, env...)
	cfg, err := config.Load("", withEnv(c.env, env...), nil, "scaler-host")
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() { done <- runScaler(ctx, cfg, func(g, a string) { addrs <- [2]string{g, a} }) }()
	var addr [2]string
	select {
	case addr = <-addrs:
	case err := <-done:
		cancel()
		c.t.Fatalf("scaler ended before serving: %v", err)
	}
	conn, err := grpc.NewClient(addr[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		conn.Close()
		cancel()
		if err := <-done; err != nil {
			c.t.Errorf("scaler: %v", err)
		}
	})
	return pb.NewExternalScalerClient(conn), addr[1]
}

func ref(md ...string) *pb.ScaledObjectRef {
	r := &pb.ScaledObjectRef{Name: "workers", Namespace: "jobs", ScalerMetadata: map[string]string{}}
	for i := 0; i+1 < len(md); i += 2 {
		r.ScalerMetadata[md[i]] = md[i+1]
	}
	return r
}

// metric asks for one metric as KEDA's HPA adapter does.
func metric(t *testing.T, cl pb.ExternalScalerClient, r *pb.ScaledObjectRef, name string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cl.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: r, MetricName: name})
	if err != nil {
		t.Fatalf("GetMetrics %s: %v", name, err)
	}
	if len(res.MetricValues) != 1 || res.MetricValues[0].MetricName != name {
		t.Fatalf("want one value of %s, have %v", name, res.MetricValues)
	}
	return res.MetricValues[0].MetricValueFloat
}

func (c *cluster) enqueueN(q string, n int) {
	c.t.Helper()
	for i := 0; i < n; i++ {
		c.ok("ctl", "enqueue", q, "t", "--args", fmt.Sprintf(`{"i":%d}`, i))
	}
}

// TestScalerFollowsAPausedQueueAndDrainsToZero acts as KEDA against a real
// fleet: while a queue is paused its lag grows and the metric follows it;
// resumed, the worker runs the backlog and the selection goes inactive.
func TestScalerFollowsAPausedQueueAndDrainsToZero(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "mail", "--task", "*=/bin/true")
	c.startWorker("w1")
	cl := c.startScaler()
	ctx := context.Background()
	r := ref(scaler.KeyQueues, "mail", scaler.KeyTargetLag, "100")

	spec, err := cl.GetMetricSpec(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.MetricSpecs) != 1 || spec.MetricSpecs[0].MetricName != scaler.MetricLag || spec.MetricSpecs[0].TargetSizeFloat != 100 {
		t.Fatalf("want one spec %s with target 100, have %v", scaler.MetricLag, spec.MetricSpecs)
	}
	c.ok("ctl", "pause", "--queue", "mail", "--reason", "scaler test")
	c.enqueueN("mail", 3)
	if v := metric(t, cl, r, scaler.MetricLag); v != 3 {
		t.Fatalf("want lag 3 after 3 enqueues to a paused queue, have %v", v)
	}
	c.enqueueN("mail", 2)
	if v := metric(t, cl, r, scaler.MetricLag); v != 5 {
		t.Fatalf("want lag 5 after 2 more, have %v", v)
	}
	if a, err := cl.IsActive(ctx, r); err != nil || !a.Result {
		t.Fatalf("want active with lag 5, have %v, %v", a, err)
	}
	c.ok("ctl", "resume", "--queue", "mail")
	eventually(t, 60*time.Second, func() error {
		if v := metric(t, cl, r, scaler.MetricLag); v != 0 {
			return fmt.Errorf("want lag 0 after the worker ran the backlog, have %v", v)
		}
		return nil
	})
	if a, err := cl.IsActive(ctx, r); err != nil || a.Result {
		t.Fatalf("want inactive with lag 0, have %v, %v", a, err)
	}
}

// TestScalerClampsToQueuesWithLag: one hot queue among three never asks for
// more than one worker, whatever its lag; the oldest-age metric is clamped
// the same way.
func TestScalerClampsToQueuesWithLag(t *testing.T) {
	c := newCluster(t)
	for _, q := range []string{"hot-a", "hot-b", "hot-c"} {
		c.ok("ctl", "queue", "create", q, "--task", "*=/bin/true")
	}
	c.ok("ctl", "pause", "--queue", "hot-a")
	c.enqueueN("hot-a", 12)
	cl := c.startScaler()
	r := ref(scaler.KeyPrefix, "hot-", scaler.KeyTargetLag, "5", scaler.KeyTargetOldestAgeSeconds, "0.001")

	spec, err := cl.GetMetricSpec(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.MetricSpecs) != 2 || spec.MetricSpecs[1].MetricName != scaler.MetricOldestAge {
		t.Fatalf("want the lag and oldest-age specs, have %v", spec.MetricSpecs)
	}
	if v := metric(t, cl, r, scaler.MetricLag); v != 5 {
		t.Fatalf("want lag 12 clamped to 1 queue × target 5 = 5, have %v", v)
	}
	if v := metric(t, cl, r, "s0-"+scaler.MetricLag); v != 5 {
		t.Fatalf("want the same value under KEDA's s0- prefixed name, have %v", v)
	}
	if v := metric(t, cl, r, scaler.MetricOldestAge); v <= 0 || v > 0.001 {
		t.Fatalf("want the oldest age clamped to 1 queue × 0.001 s, have %v", v)
	}
	// A second hot queue raises the ceiling to two workers.
	c.ok("ctl", "pause", "--queue", "hot-b")
	c.enqueueN("hot-b", 1)
	if v := metric(t, cl, r, scaler.MetricLag); v != 10 {
		t.Fatalf("want lag 13 clamped to 2 queues × 5 = 10, have %v", v)
	}
}

// TestScalerStreamPushesOnEnqueueToAnIdleSelection: StreamIsActive reports
// inactive, and an enqueue to the idle selection pushes active. The poll
// backstop is an hour here, so the push can only come from the enqueue's
// wake-up. (How fast it arrives is a benchmark's business, not this test's.)
func TestScalerStreamPushesOnEnqueueToAnIdleSelection(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "idle-a", "--task", "*=/bin/true")
	c.ok("ctl", "pause", "--queue", "idle-a") // no worker runs; the lag stays
	cl := c.startScaler("DROVER_SCALER_POLL_INTERVAL=1h")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := cl.StreamIsActive(ctx, ref(scaler.KeyGlob, "idle-*"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil || first.Result {
		t.Fatalf("want a first push of inactive, have %v, %v", first, err)
	}
	c.enqueueN("idle-a", 1)
	next, err := st.Recv()
	if err != nil || !next.Result {
		t.Fatalf("want a push of active after the enqueue, have %v, %v", next, err)
	}
}

// TestScalerRejectsBadMetadata: unknown keys, bad values, a selection that
// matches nothing and an unknown metric are gRPC errors, and the scaler
// keeps serving.
func TestScalerRejectsBadMetadata(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "known", "--task", "*=/bin/true")
	cl := c.startScaler()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		r    *pb.ScaledObjectRef
		code codes.Code
		msg  string
	}{
		{"unknown key", ref(scaler.KeyQueues, "known", "queueName", "known"), codes.InvalidArgument, "unknown keys"},
		{"no selection", ref(scaler.KeyTargetLag, "10"), codes.InvalidArgument, "no queue selected"},
		{"bad target", ref(scaler.KeyQueues, "known", scaler.KeyTargetLag, "ten"), codes.InvalidArgument, "targetLag"},
		{"zero target", ref(scaler.KeyQueues, "known", scaler.KeyTargetLag, "0"), codes.InvalidArgument, "targetLag"},
		{"bad glob", ref(scaler.KeyGlob, "known[", scaler.KeyTargetLag, "1"), codes.InvalidArgument, "pattern"},
		{"bad age", ref(scaler.KeyQueues, "known", scaler.KeyTargetOldestAgeSeconds, "-1"), codes.InvalidArgument, "targetOldestAgeSeconds"},
		{"unknown queue", ref(scaler.KeyQueues, "nosuch"), codes.NotFound, "unknown queues: nosuch"},
		{"one misspelt queue", ref(scaler.KeyQueues, "known,nosuch"), codes.NotFound, "unknown queues: nosuch"},
		{"unknown prefix", ref(scaler.KeyPrefix, "nope-"), codes.NotFound, "matches no queue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cl.IsActive(ctx, tc.r)
			checkCode(t, "IsActive", err, tc.code, tc.msg)
			_, err = cl.GetMetricSpec(ctx, tc.r)
			checkCode(t, "GetMetricSpec", err, tc.code, tc.msg)
			_, err = cl.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: tc.r, MetricName: scaler.MetricLag})
			checkCode(t, "GetMetrics", err, tc.code, tc.msg)
			st, err := cl.StreamIsActive(ctx, tc.r)
			if err == nil {
				_, err = st.Recv()
			}
			checkCode(t, "StreamIsActive", err, tc.code, tc.msg)
		})
	}
	_, err := cl.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(scaler.KeyQueues, "known"), MetricName: "cpu"})
	checkCode(t, "GetMetrics of cpu", err, codes.InvalidArgument, "unknown metric")
	_, err = cl.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(scaler.KeyQueues, "known"), MetricName: scaler.MetricOldestAge})
	checkCode(t, "GetMetrics of the age without its target", err, codes.InvalidArgument, "unknown metric")
	if v := metric(t, cl, ref(scaler.KeyQueues, "known"), scaler.MetricLag); v != 0 {
		t.Fatalf("want the scaler still serving (lag 0), have %v", v)
	}
}

func checkCode(t *testing.T, call string, err error, code codes.Code, msg string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code || !strings.Contains(st.Message(), msg) {
		t.Fatalf("%s: want %s with %q, have %v", call, code, msg, err)
	}
}

func TestScalerNeedsMutualTLSBeyondLoopback(t *testing.T) {
	r := runDrover(t, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, "", "scaler", "--listen", "0.0.0.0:9093")
	checkFailure(t, r, exitUsage, []string{"scaler.addr", "mutual TLS"})
}

// TestStatusShowsWorkersNeeded: `ctl status` prints the workers needed for
// scaler.target_lag, clamped to the queues with lag like the scaler's metric.
func TestStatusShowsWorkersNeeded(t *testing.T) {
	c := newCluster(t)
	for _, q := range []string{"wn-a", "wn-b", "wn-c"} {
		c.ok("ctl", "queue", "create", q)
	}
	c.enqueueN("wn-a", 3)
	c.enqueueN("wn-b", 1)
	if out := c.ok("ctl", "status", "--set", "scaler.target_lag=10").stdout; !strings.Contains(out, "WORKERS NEEDED 1 for target lag 10 (lag 4 in 2 queues)") {
		t.Fatalf("want 1 worker for lag 4 at target 10, have:\n%s", out)
	}
	var rep statusReport
	c.okJSON(&rep, "ctl", "status", "--set", "scaler.target_lag=1")
	if rep.Autoscale != (scaler.Autoscale{TargetLag: 1, Lag: 4, QueuesWithLag: 2, WorkersNeeded: 2}) {
		t.Fatalf("want lag 4 at target 1 clamped to 2 workers (2 queues with lag), have %+v", rep.Autoscale)
	}
}

// TestScalerExportsTheFleetWideGauges: the scaler publishes one gauge set
// per configured selection, with the workers needed clamped to the queues
// with lag.
func TestScalerExportsTheFleetWideGauges(t *testing.T) {
	c := newCluster(t)
	for _, q := range []string{"g-a", "g-b"} {
		c.ok("ctl", "queue", "create", q)
	}
	c.enqueueN("g-a", 4)
	_, admin := c.startScalerAdmin("DROVER_SCALER_ADMIN_ADDR=127.0.0.1:0", "DROVER_SCALER_SELECTIONS=g-*", "DROVER_SCALER_TARGET_LAG=2")
	want := []string{
		`drover_autoscale_lag{selection="g-*"} 4`,
		`drover_autoscale_queues_with_lag{selection="g-*"} 1`,
		`drover_autoscale_workers_needed{selection="g-*",target_lag="2"} 1`,
	}
	eventually(t, 30*time.Second, func() error {
		res, err := http.Get("http://" + admin + "/metrics")
		if err != nil {
			return err
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				return fmt.Errorf("want %q in /metrics, have:\n%s", w, grepLines(string(body), "autoscale"))
			}
		}
		return nil
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
