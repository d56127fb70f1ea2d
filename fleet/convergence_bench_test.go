package fleet

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/testing/testenv"
)

// BenchmarkConvergence10x1000 measures, on a real ZooKeeper, how long the
// rebalance protocol takes from a membership change to every queue being run
// by the member the new assignment names: a planned join, a planned leave,
// and a crash (session cut; the session timeout is 4 s). It also reports
// the ZooKeeper writes of each change (claims, releases, and the assignment
// write) next to the number of queues that moved. Run with -benchtime 1x.
func BenchmarkConvergence10x1000(b *testing.B) {
	const members, queues = 10, 1000
	var join, leave, crash time.Duration
	var joinWrites, leaveWrites, joinMoved, leaveMoved int64
	for i := 0; i < b.N; i++ {
		f := newFleet(b, testenv.ZooKeeper(b).Addrs, queues)
		for m := 0; m < members-1; m++ {
			f.start(fmt.Sprintf("m%02d", m))
		}
		f.waitConverged("start")

		before, w0 := f.snapshot(), f.writes.Load()
		start := time.Now()
		f.start(fmt.Sprintf("m%02d", members-1))
		f.waitConverged("join")
		join += time.Since(start)
		joinMoved += int64(f.checkStayed(before, nil, "join"))
		joinWrites += f.writes.Load() - w0 + 1

		before, w0 = f.snapshot(), f.writes.Load()
		start = time.Now()
		f.leave("m03")
		f.waitConverged("leave")
		leave += time.Since(start)
		leaveMoved += int64(f.checkStayed(before, map[string]bool{"m03": true}, "leave"))
		leaveWrites += f.writes.Load() - w0 + 1

		start = time.Now()
		f.crash("m05")
		f.waitConverged("crash")
		crash += time.Since(start)
		for _, m := range f.members {
			m.stop()
		}
		for _, m := range f.members {
			<-m.done
		}
	}
	n := float64(b.N)
	b.ReportMetric(join.Seconds()/n, "join-s")
	b.ReportMetric(leave.Seconds()/n, "leave-s")
	b.ReportMetric(crash.Seconds()/n, "crash-s")
	b.ReportMetric(float64(joinMoved)/n, "join-moved")
	b.ReportMetric(float64(joinWrites)/n, "join-zk-writes")
	b.ReportMetric(float64(leaveMoved)/n, "leave-moved")
	b.ReportMetric(float64(leaveWrites)/n, "leave-zk-writes")
}
