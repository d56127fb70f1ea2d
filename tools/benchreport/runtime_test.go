package main

import (
	"strings"
	"testing"
)

// figures returns every unit of the fleet runtime section at a value that
// meets its target, with over applied on top.
func figures(over map[string]float64) map[string][]float64 {
	fig := map[string][]float64{"workers": {4}, "queues": {100000}, "small-queues": {1000}, "busy-queues": {10000}}
	for _, t := range fleetRuntime.Targets {
		fig[t.Unit] = []float64{t.Value}
	}
	for k, v := range over {
		fig[k] = []float64{v}
	}
	return fig
}

func TestFleetRuntimeWhyIsEmptyWhenEveryTargetIsMet(t *testing.T) {
	if why := fleetRuntimeWhy(fleetRuntime, figures(nil)); why != "" {
		t.Fatalf("every target met: want no explanation, have %q", why)
	}
}

func TestFleetRuntimeWhyNamesTheCause(t *testing.T) {
	why := fleetRuntimeWhy(fleetRuntime, figures(map[string]float64{
		"busy-zk-writes/s-max-member": 120, "busy-zk-write-ops/s": 125,
		"goroutines-full/small": 7, "goroutines-small": 80, "goroutines-full": 25000,
		"busy-redis-cmds/msg": 14.2,
	}))
	for _, want := range []string{"not coalesced across queues", "Goroutines: 25000 per worker", "would give 24830", "Redis work per message: 14.20 commands"} {
		if !strings.Contains(why, want) {
			t.Errorf("want %q in the explanation, have:\n%s", want, why)
		}
	}
	if strings.Contains(why, "Idle Redis") {
		t.Errorf("a met target explained as missed:\n%s", why)
	}
}

func TestFailureLinesKeepTheBenchmarksOwnMessages(t *testing.T) {
	out := "goos: linux\nBenchmarkFleetRuntime\n    fleet_bench_test.go:101: the fleet did not run all 200 queues\n        2026 [INFO] noise\n--- FAIL: BenchmarkFleetRuntime\nFAIL\n"
	have := failureLines(out)
	want := "fleet_bench_test.go:101: the fleet did not run all 200 queues\n--- FAIL: BenchmarkFleetRuntime"
	if have != want {
		t.Fatalf("want %q, have %q", want, have)
	}
}

func TestTheTableShowsTheSpreadOverWindows(t *testing.T) {
	res := result{"BenchmarkFleetRuntime": {
		"busy-windows": {3}, "busy-p50-ms": {6.1}, "busy-p50-ms-min": {5.4}, "busy-p50-ms-max": {11.5},
		"idle-cpu-%-max-worker": {2.5}, "busy-drain-s": {0.2},
	}}
	var b strings.Builder
	render(&b, fleetRuntime, res, "go test")
	out := b.String()
	for _, want := range []string{
		"| FleetRuntime | busy-p50-ms | 6.10 | 1 run × 3 windows (5.40 – 11.50) |",
		// Figures of one window or measured once keep the runs' column.
		"| FleetRuntime | idle-cpu-%-max-worker | 2.50 | 1 (2.50 – 2.50) |",
		"| FleetRuntime | busy-drain-s | 0.2 | 1 (0.2 – 0.2) |",
		"| busy: enqueue → start p50 < 10 ms | 6.10 busy-p50-ms | met |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want the row %q, have:\n%s", want, out)
		}
	}
	if strings.Contains(out, "busy-p50-ms-min |") {
		t.Errorf("the -min companion has a row of its own; want it in the spread column:\n%s", out)
	}
}

func TestTheSpreadOverWindowsCoversEveryRun(t *testing.T) {
	fig := map[string][]float64{"busy-windows": {3, 3}, "busy-p99-ms": {46, 90}, "busy-p99-ms-min": {40, 70}, "busy-p99-ms-max": {60, 120}}
	if have, want := spread(fleetRuntime, fig, "busy-p99-ms"), "2 runs × 3 windows (40.00 – 120)"; have != want {
		t.Fatalf("want %q, have %q", want, have)
	}
}

func TestFleetRuntimeWhyGivesTheWindowsRange(t *testing.T) {
	why := fleetRuntimeWhy(fleetRuntime, figures(map[string]float64{"busy-p50-ms": 11.5, "busy-p50-ms-min": 5.4, "busy-p50-ms-max": 12}))
	if want := "p50 11.50 ms (windows 5.40 – 12.00)"; !strings.Contains(why, want) {
		t.Fatalf("want %q in the explanation, have:\n%s", want, why)
	}
}

// A missed latency is read beside the machine's CPU: the fleet, Redis,
// ZooKeeper and the producer share its cores, and a machine near 100%
// queues each behind the others.
func TestFleetRuntimeWhyGivesTheMachinesCPUBesideALatency(t *testing.T) {
	why := fleetRuntimeWhy(fleetRuntime, figures(map[string]float64{"busy-p99-ms": 133, "busy-host-cpu-%": 91, "busy-host-cpu-%-min": 88, "busy-host-cpu-%-max": 94, "busy-host-cpu-%-worst-part": 97}))
	if want := "the machine's CPU was 91.00% used (windows 88.00 – 94.00) over its cores (every process), 97.00% in the busiest sixth"; !strings.Contains(why, want) {
		t.Fatalf("want %q in the explanation, have:\n%s", want, why)
	}
}

// The sparse fleet's section has the same targets, each naming its own
// benchmark, so that its verdicts are read off its own run.
func TestTheSparseFleetHasTheTargetsOfItsOwnBenchmark(t *testing.T) {
	if len(fleetRuntimeSparse.Targets) != len(fleetRuntime.Targets) || fleetRuntimeSparse.Title == fleetRuntime.Title {
		t.Fatalf("want the same targets under another title, have %d and %d", len(fleetRuntimeSparse.Targets), len(fleetRuntime.Targets))
	}
	for i, tg := range fleetRuntimeSparse.Targets {
		if tg.Bench != "BenchmarkFleetRuntimeSparse" || tg.Unit != fleetRuntime.Targets[i].Unit || fleetRuntime.Targets[i].Bench != "BenchmarkFleetRuntime" {
			t.Errorf("target %d: %+v (the dense one %+v)", i, tg, fleetRuntime.Targets[i])
		}
	}
}
