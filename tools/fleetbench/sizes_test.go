package fleetbench

import (
	"fmt"
	"strconv"
	"time"
)

// sizes are the fleet and the load of one BenchmarkFleetRuntime run. The
// defaults are issue 14's; DROVER_FLEETBENCH_SIZE=quick picks a size for a
// check in under a minute, and each field can be overridden on its own:
//
//	DROVER_FLEETBENCH_WORKERS        worker processes (4)
//	DROVER_FLEETBENCH_SMALL_QUEUES   queues of the first, small fleet (1,000)
//	DROVER_FLEETBENCH_QUEUES         idle queues of the full fleet (100,000)
//	DROVER_FLEETBENCH_BUSY_QUEUES    queues that receive messages (10,000)
//	DROVER_FLEETBENCH_RATE           messages/s over all busy queues (10,000)
//	DROVER_FLEETBENCH_WINDOW         length of each measured window (60s)
//	DROVER_FLEETBENCH_BUSY_WINDOWS   busy windows measured back to back, each figure their median (3)
//	DROVER_FLEETBENCH_SETTLE         least wait after convergence, before measuring (10s)
//	DROVER_FLEETBENCH_SETTLE_MAX     most wait for the workers to quiet down (45s)
//	DROVER_FLEETBENCH_CONVERGE       longest wait for the fleet to run every queue (10m)
type sizes struct {
	Workers     int
	SmallQueues int
	Queues      int
	BusyQueues  int
	Rate        int
	Window      time.Duration
	BusyWindows int
	Settle      time.Duration
	SettleMax   time.Duration
	Converge    time.Duration
}

func defaultSizes() sizes {
	return sizes{Workers: 4, SmallQueues: 1000, Queues: 100000, BusyQueues: 10000, Rate: 10000,
		Window: time.Minute, BusyWindows: 3, Settle: 10 * time.Second, SettleMax: 45 * time.Second, Converge: 10 * time.Minute}
}

func quickSizes() sizes {
	return sizes{Workers: 4, SmallQueues: 200, Queues: 2000, BusyQueues: 500, Rate: 500,
		Window: 10 * time.Second, BusyWindows: 2, Settle: 5 * time.Second, SettleMax: 15 * time.Second, Converge: 3 * time.Minute}
}

// sizesFromEnv reads the sizes from the environment (see sizes).
func sizesFromEnv(getenv func(string) string) (sizes, error) {
	sz := defaultSizes()
	switch v := getenv("DROVER_FLEETBENCH_SIZE"); v {
	case "", "full":
	case "quick":
		sz = quickSizes()
	default:
		return sz, fmt.Errorf("DROVER_FLEETBENCH_SIZE: want full or quick, have %q", v)
	}
	ints := []struct {
		key string
		dst *int
	}{
		{"WORKERS", &sz.Workers}, {"SMALL_QUEUES", &sz.SmallQueues}, {"QUEUES", &sz.Queues},
		{"BUSY_QUEUES", &sz.BusyQueues}, {"RATE", &sz.Rate}, {"BUSY_WINDOWS", &sz.BusyWindows},
	}
	for _, f := range ints {
		if v := getenv("DROVER_FLEETBENCH_" + f.key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return sz, fmt.Errorf("DROVER_FLEETBENCH_%s: want a whole number ≥ 1, have %q", f.key, v)
			}
			*f.dst = n
		}
	}
	durations := []struct {
		key string
		dst *time.Duration
	}{{"WINDOW", &sz.Window}, {"SETTLE", &sz.Settle}, {"SETTLE_MAX", &sz.SettleMax}, {"CONVERGE", &sz.Converge}}
	for _, f := range durations {
		if v := getenv("DROVER_FLEETBENCH_" + f.key); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return sz, fmt.Errorf("DROVER_FLEETBENCH_%s: want a duration like 60s, have %q", f.key, v)
			}
			*f.dst = d
		}
	}
	switch {
	case sz.SmallQueues > sz.Queues:
		return sz, fmt.Errorf("DROVER_FLEETBENCH_SMALL_QUEUES (%d) is more than DROVER_FLEETBENCH_QUEUES (%d)", sz.SmallQueues, sz.Queues)
	case sz.BusyQueues > sz.Queues:
		return sz, fmt.Errorf("DROVER_FLEETBENCH_BUSY_QUEUES (%d) is more than DROVER_FLEETBENCH_QUEUES (%d)", sz.BusyQueues, sz.Queues)
	case sz.SettleMax < sz.Settle:
		return sz, fmt.Errorf("DROVER_FLEETBENCH_SETTLE_MAX (%s) is less than DROVER_FLEETBENCH_SETTLE (%s)", sz.SettleMax, sz.Settle)
	case sz.Window < 3*time.Second:
		return sz, fmt.Errorf("DROVER_FLEETBENCH_WINDOW: want at least 3s, have %s", sz.Window)
	}
	return sz, nil
}
