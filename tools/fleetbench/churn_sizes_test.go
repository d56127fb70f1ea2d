package fleetbench

import (
	"fmt"
	"strconv"
	"time"
)

// churnSizes are BenchmarkChurn's knobs (issue 40's "Must show"). The
// defaults are the sizes; DROVER_CHURNBENCH_SIZE=smoke is a run of
// a couple of minutes on a 2-core machine, and every knob can be set alone:
//
//	DROVER_CHURNBENCH_SIZE           "smoke" for the small sizes below
//	DROVER_CHURNBENCH_KEYS           keys registered before the churn (100,000; smoke 2,000)
//	DROVER_CHURNBENCH_RATE           new keys a second, before and during the churn (1,000; smoke 100)
//	DROVER_CHURNBENCH_BUSY           busy ordered keys running 5–10 s tasks (200; smoke 50)
//	DROVER_CHURNBENCH_DURATION       the churn phase (5m; smoke 30s)
//	DROVER_CHURNBENCH_WORKERS        worker processes (4)
//	DROVER_CHURNBENCH_RETIRE_AFTER   the family's retire_after (KEYS/RATE seconds, at least 5s)
//	DROVER_CHURNBENCH_DRAIN_TIMEOUT  the workers' drain_timeout (5s, as `drover dev`)
//	DROVER_CHURNBENCH_IDLE_WINDOW    the idle window after the churn (30s; smoke 10s; 0s: none)
type churnSizes struct {
	Keys, Rate, Busy, Workers int
	Duration, RetireAfter     time.Duration
	DrainTimeout, IdleWindow  time.Duration
}

func defaultChurnSizes() churnSizes {
	return churnSizes{Keys: 100000, Rate: 1000, Busy: 200, Workers: 4,
		Duration: 5 * time.Minute, DrainTimeout: 5 * time.Second, IdleWindow: 30 * time.Second}
}

func smokeChurnSizes() churnSizes {
	return churnSizes{Keys: 2000, Rate: 100, Busy: 50, Workers: 4,
		Duration: 30 * time.Second, DrainTimeout: 5 * time.Second, IdleWindow: 10 * time.Second}
}

// churnSizesFromEnv reads the knobs with getenv; an unreadable value is an
// error naming its variable. RetireAfter, unless set, is the time the
// producer takes to send Keys names: each key becomes retirable about
// that long after its only message, so that once the churn starts keys
// become retirable at Rate a second while Rate new ones arrive and the
// fleet keeps about Keys keys.
func churnSizesFromEnv(getenv func(string) string) (churnSizes, error) {
	sz := defaultChurnSizes()
	switch v := getenv("DROVER_CHURNBENCH_SIZE"); v {
	case "", "full":
	case "smoke":
		sz = smokeChurnSizes()
	default:
		return sz, fmt.Errorf("DROVER_CHURNBENCH_SIZE: want smoke or full, have %q", v)
	}
	for _, n := range []struct {
		key string
		to  *int
	}{{"KEYS", &sz.Keys}, {"RATE", &sz.Rate}, {"BUSY", &sz.Busy}, {"WORKERS", &sz.Workers}} {
		v := getenv("DROVER_CHURNBENCH_" + n.key)
		if v == "" {
			continue
		}
		i, err := strconv.Atoi(v)
		if err != nil || i < 1 {
			return sz, fmt.Errorf("DROVER_CHURNBENCH_%s: want a positive integer, have %q", n.key, v)
		}
		*n.to = i
	}
	for _, d := range []struct {
		key    string
		to     *time.Duration
		zeroOK bool
	}{{"DURATION", &sz.Duration, false}, {"RETIRE_AFTER", &sz.RetireAfter, false}, {"DRAIN_TIMEOUT", &sz.DrainTimeout, false}, {"IDLE_WINDOW", &sz.IdleWindow, true}} {
		v := getenv("DROVER_CHURNBENCH_" + d.key)
		if v == "" {
			continue
		}
		x, err := time.ParseDuration(v)
		if err != nil || x < 0 || (x == 0 && !d.zeroOK) {
			return sz, fmt.Errorf("DROVER_CHURNBENCH_%s: want a positive duration, have %q", d.key, v)
		}
		*d.to = x
	}
	if sz.RetireAfter == 0 {
		sz.RetireAfter = max(5*time.Second, time.Duration(sz.Keys)*time.Second/time.Duration(sz.Rate))
	}
	return sz, nil
}
