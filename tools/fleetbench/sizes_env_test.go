package fleetbench

import (
	"strings"
	"testing"
	"time"
)

func TestSizesFromTheEnvironment(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	sz, err := sizesFromEnv(env(nil))
	if err != nil || sz != defaultSizes() {
		t.Fatalf("no settings: want the defaults %+v, have %+v (err %v)", defaultSizes(), sz, err)
	}
	if defaultSizes().BusyWindows != 3 || quickSizes().BusyWindows != 2 {
		t.Fatalf("busy windows: want 3 by default and 2 at the quick size, have %d and %d", defaultSizes().BusyWindows, quickSizes().BusyWindows)
	}
	sz, err = sizesFromEnv(env(map[string]string{"DROVER_FLEETBENCH_SIZE": "quick", "DROVER_FLEETBENCH_RATE": "300", "DROVER_FLEETBENCH_WINDOW": "20s", "DROVER_FLEETBENCH_BUSY_WINDOWS": "5"}))
	if err != nil {
		t.Fatal(err)
	}
	want := quickSizes()
	want.Rate, want.Window, want.BusyWindows = 300, 20*time.Second, 5
	if sz != want {
		t.Fatalf("quick with overrides: want %+v, have %+v", want, sz)
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"DROVER_FLEETBENCH_SIZE": "huge"}, "DROVER_FLEETBENCH_SIZE"},
		{map[string]string{"DROVER_FLEETBENCH_QUEUES": "many"}, "DROVER_FLEETBENCH_QUEUES"},
		{map[string]string{"DROVER_FLEETBENCH_WINDOW": "1m-"}, "DROVER_FLEETBENCH_WINDOW"},
		{map[string]string{"DROVER_FLEETBENCH_BUSY_WINDOWS": "0"}, "DROVER_FLEETBENCH_BUSY_WINDOWS"},
		{map[string]string{"DROVER_FLEETBENCH_QUEUES": "500"}, "SMALL_QUEUES (1000) is more than"},
		{map[string]string{"DROVER_FLEETBENCH_BUSY_QUEUES": "200000"}, "BUSY_QUEUES (200000) is more than"},
	} {
		_, err := sizesFromEnv(env(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: want an error naming %q, have %v", c.env, c.want, err)
		}
	}
}
