package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/localserver"
)

// BenchmarkScale is one fleet size of the scale section as a Go benchmark,
// so that tools/abtool can alternate it between two revisions and judge a
// change by its own runs (docs/benchmarks.md, "A/B of the scale bench"):
//
//	go build -o /tmp/abtool ./tools/abtool
//	cd bench && BENCH_SCALE_SIZE=100x300000 /tmp/abtool -a HEAD~1 -b HEAD \
//	    -bench '^BenchmarkScale$' -pkg . -rounds 3 -benchtime 1x -timeout 30m
//
// BENCH_SCALE_SIZE is members×queues (default 100x100000). The servers are
// the section's (ZooKeeper with a production JVM and a 4 GB heap), members
// on a 10 s session. Each event's convergence is reported in seconds, with
// the CPU of the bench process and of ZooKeeper through it: the CPU is the
// robust figure on a shared machine. A member session lost on the way fails
// the run: its figures would be another fleet's.
func BenchmarkScale(b *testing.B) {
	size := os.Getenv("BENCH_SCALE_SIZE")
	if size == "" {
		size = "100x100000"
	}
	sizes := parseSizes(size)
	if len(sizes) != 1 {
		b.Fatalf("BENCH_SCALE_SIZE=%q: want one members×queues size, such as 100x300000", size)
	}
	srv, err := startServers(true, localserver.ZKOptions{Heap: "4g", ProductionJVM: true})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.close()
	var sum struct {
		start, join, leave, crash             time.Duration
		startCPU, joinCPU, leaveCPU, crashCPU eventCPU
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := &scaleResult{Members: sizes[0][0], Queues: sizes[0][1], SessionTimeout: 10 * time.Second}
		root := fmt.Sprintf("/bench/scale-ab-%d-%dx%d", i, r.Members, r.Queues)
		if err := runScaleSize(context.Background(), srv, root, r, 15*time.Minute, os.Stderr); err != nil {
			b.Fatalf("%d×%d: %v", r.Members, r.Queues, err)
		}
		if len(r.LostSessions) > 0 {
			b.Fatalf("%d×%d: %d member sessions lost on the way (%v)", r.Members, r.Queues, len(r.LostSessions), r.LostSessions)
		}
		sum.start += r.Start
		sum.join += r.Join
		sum.leave += r.Leave
		sum.crash += r.Crash
		for _, p := range []struct {
			to   *eventCPU
			from eventCPU
		}{{&sum.startCPU, r.StartCPU}, {&sum.joinCPU, r.JoinCPU}, {&sum.leaveCPU, r.LeaveCPU}, {&sum.crashCPU, r.CrashCPU}} {
			p.to.Members += p.from.Members
			p.to.ZooKeeper += p.from.ZooKeeper
		}
	}
	n := float64(b.N)
	for _, m := range []struct {
		v    time.Duration
		unit string
	}{
		{sum.start, "start-s"}, {sum.join, "join-s"}, {sum.leave, "leave-s"}, {sum.crash, "crash-s"},
		{sum.startCPU.Members, "start-members-cpu-s"}, {sum.startCPU.ZooKeeper, "start-zk-cpu-s"},
		{sum.joinCPU.Members, "join-members-cpu-s"}, {sum.joinCPU.ZooKeeper, "join-zk-cpu-s"},
		{sum.leaveCPU.Members, "leave-members-cpu-s"}, {sum.leaveCPU.ZooKeeper, "leave-zk-cpu-s"},
		{sum.crashCPU.Members, "crash-members-cpu-s"}, {sum.crashCPU.ZooKeeper, "crash-zk-cpu-s"},
	} {
		b.ReportMetric(m.v.Seconds()/n, m.unit)
	}
}
