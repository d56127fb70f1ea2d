package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/scheduler"
)

// startScheduler starts `drover scheduler` talking to ZooKeeper through its
// own proxy, so that its connection can be cut.
func (f *fleet) startScheduler(name string, zkProxy string) *process {
	f.t.Helper()
	return f.startDrover("scheduler", name, "DROVER_ZOOKEEPER_SERVERS="+zkProxy)
}

// Three scheduler candidates, 200 entries firing every second, the leader
// killed twice (kill -9, then a cut ZooKeeper connection): every (entry,
// slot) fires exactly once, counted in the target queue.
func TestSchedulerFailoverFiresEverySlotOnce(t *testing.T) {
	const (
		sessionTimeout = 4 * time.Second
		entries        = 200
		runFor         = 60 * time.Second
	)
	f := newFleet(t, sessionTimeout)
	ctx := context.Background()
	mgr := scheduler.NewManager(f.store.Schedules())
	for i := 0; i < entries; i++ {
		def := scheduler.Definition{
			Name: fmt.Sprintf("tick%03d", i), Queue: "ticks", Task: "tick",
			Schedule: scheduler.Spec{Type: scheduler.TypeInterval, Every: time.Second},
			Catchup:  scheduler.CatchupAll,
		}
		if err := mgr.Add(ctx, def); err != nil {
			t.Fatal(err)
		}
	}
	zkAddr := testenv.ZooKeeper(t).Addrs[0]
	proxies := map[string]*testenv.Proxy{}
	for _, n := range []string{"sa", "sb", "sc"} {
		proxies[n] = testenv.NewProxy(t, zkAddr)
		f.startScheduler(n, proxies[n].Addr)
	}
	el, err := f.zk.Group().Election(coordinator.ElectionScheduler)
	if err != nil {
		t.Fatal(err)
	}
	leader := func() string {
		li, err := el.Leader(ctx)
		if err != nil {
			return ""
		}
		return li.Name
	}
	start := time.Now()
	waitFor(t, 30*time.Second, "a scheduler leader", func() bool { return leader() != "" })

	time.Sleep(runFor / 3)
	first := leader()
	t.Logf("killing leader %s with SIGKILL", first)
	f.workers[first].cmd.Process.Signal(syscall.SIGKILL)
	waitFor(t, 30*time.Second, "a new leader", func() bool { l := leader(); return l != "" && l != first })

	time.Sleep(runFor / 3)
	second := leader()
	t.Logf("cutting leader %s off ZooKeeper", second)
	proxies[second].Blackhole()
	waitFor(t, 30*time.Second, "a third leader", func() bool { l := leader(); return l != "" && l != second && l != first })
	time.Sleep(runFor - time.Since(start))

	// Stop firing, then count what reached the queue.
	for _, n := range []string{"sa", "sb", "sc"} {
		f.workers[n].cmd.Process.Signal(syscall.SIGKILL)
	}
	slots := map[string][]int64{}
	var after drover.Position
	var maxLate time.Duration
	for {
		es, err := f.store.Log().ReadAfter(ctx, "ticks", after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			break
		}
		for _, e := range es {
			// id = sched:<name>:<slot-unix>
			parts := strings.Split(e.ID, ":")
			if len(parts) != 3 || parts[0] != "sched" {
				t.Fatalf("unexpected id %q in the target queue", e.ID)
			}
			slot, err := strconv.ParseInt(parts[2], 10, 64)
			if err != nil {
				t.Fatalf("id %q: %v", e.ID, err)
			}
			slots[parts[1]] = append(slots[parts[1]], slot)
			// The position is the enqueue time (Redis TIME, µs).
			if late := time.UnixMicro(int64(e.Position)).Sub(time.Unix(slot, 0)); late > maxLate {
				maxLate = late
			}
		}
		after = es[len(es)-1].Position
	}
	if len(slots) != entries {
		t.Fatalf("entries fired: want %d, have %d", entries, len(slots))
	}
	total := 0
	for name, ss := range slots {
		sort.Slice(ss, func(i, j int) bool { return ss[i] < ss[j] })
		for i := 1; i < len(ss); i++ {
			switch d := ss[i] - ss[i-1]; {
			case d == 0:
				t.Fatalf("%s: slot %d fired twice", name, ss[i])
			case d != 1:
				t.Fatalf("%s: slots %d..%d missed (catch-up all must fire every slot)", name, ss[i-1]+1, ss[i]-1)
			}
		}
		total += len(ss)
	}
	// Lateness is measured, not asserted (no timing assertions in tests):
	// BENCHMARKS.md reports it against the session timeout + 1 s target.
	t.Logf("%d fires of %d entries over %s, through two failovers; latest fire %s after its slot (session timeout %s)", total, entries, runFor, maxLate.Round(time.Millisecond), sessionTimeout)
}
