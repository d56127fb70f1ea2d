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
	if why := fleetRuntimeWhy(figures(nil)); why != "" {
		t.Fatalf("every target met: want no explanation, have %q", why)
	}
}

func TestFleetRuntimeWhyNamesTheCause(t *testing.T) {
	why := fleetRuntimeWhy(figures(map[string]float64{
		"busy-zk-writes/s-max-member": 120, "busy-zk-write-ops/s": 125,
		"goroutines-full/small": 7, "goroutines-small": 80, "goroutines-full": 25000,
	}))
	for _, want := range []string{"not coalesced across queues", "Goroutines: 25000 per worker", "would give 24830"} {
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
