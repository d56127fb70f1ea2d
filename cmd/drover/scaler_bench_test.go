package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/scaler"
)

// BenchmarkScalerMeasure100k: one poll of the KEDA scaler over a selection
// of 100,000 registered queues (a prefix), 1,000 of them with a message, on
// real ZooKeeper and Redis: the registry read, every queue's offset and
// every queue's backlog, as the scaler's fleet does them.
func BenchmarkScalerMeasure100k(b *testing.B) {
	n := 100000
	if s := os.Getenv("DROVER_SCALERBENCH_QUEUES"); s != "" {
		fmt.Sscan(s, &n)
	}
	const withWork = 1000
	zk, rds := testenv.ZooKeeper(b), testenv.Redis(b)
	env := []string{
		"DROVER_ZOOKEEPER_SERVERS=" + strings.Join(zk.Addrs, ","),
		"DROVER_ZOOKEEPER_ROOT=" + testenv.Chroot(b),
		"DROVER_REDIS_ADDRS=" + rds.Addr,
		"DROVER_REDIS_PREFIX=" + testenv.Prefix(b),
		"DROVER_LOG_LEVEL=warn",
	}
	cfg, err := config.Load("", env, nil, "scaler-bench")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cc, err := cfg.Coordinator(hclog.NewNullLogger())
	if err != nil {
		b.Fatal(err)
	}
	s, err := coordinator.Connect(ctx, cc)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	cfgs := make([]drover.QueueConfig, n)
	for i := range cfgs {
		cfgs[i] = drover.QueueConfig{Name: fmt.Sprintf("cust-%06d", i), Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}
	}
	if _, err := s.Queues().CreateMany(ctx, cfgs); err != nil {
		b.Fatal(err)
	}
	store, closeStore, err := openStore(cfg, "scaler-bench", hclog.NewNullLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer closeStore()
	var msgs []*drover.Message
	for i := 0; i < n; i += n / withWork {
		msgs = append(msgs, &drover.Message{Queue: cfgs[i].Name, Task: "t"})
	}
	if _, err := store.Producer().EnqueueBatch(ctx, msgs); err != nil {
		b.Fatal(err)
	}
	fleet, err := newScalerFleet(cfg, store, hclog.NewNullLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer fleet.close()
	sel, err := scaler.NewSelection("cust-*")
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		fig, err := scaler.Measure(ctx, fleet, sel)
		total += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if fig.Queues != n || fig.QueuesWithLag != len(msgs) {
			b.Fatalf("want %d queues, %d with lag; have %+v", n, len(msgs), fig)
		}
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "poll-s")
	b.ReportMetric(float64(n), "queues")
}
