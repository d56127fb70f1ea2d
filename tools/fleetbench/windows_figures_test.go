package fleetbench

import (
	"math"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/testing/proxy"
)

func TestSummarizeTakesTheMedianOverWindows(t *testing.T) {
	// Two runs of the same code gave busy p50 5.4 ms and 11.5 ms: with a
	// third window at 6.1 the median is the typical one, not the outlier.
	med, lo, hi := summarize([]figures{
		{"busy-p50-ms": 5.4, "busy-reads/round-trip": 3},
		{"busy-p50-ms": 11.5},
		{"busy-p50-ms": 6.1, "busy-reads/round-trip": 5},
	})
	for _, c := range []struct {
		name       string
		have, want float64
	}{
		{"median p50", med["busy-p50-ms"], 6.1},
		{"min p50", lo["busy-p50-ms"], 5.4},
		{"max p50", hi["busy-p50-ms"], 11.5},
		// A figure two windows of three have: the median of those two.
		{"median reads/round-trip", med["busy-reads/round-trip"], 4},
		{"min reads/round-trip", lo["busy-reads/round-trip"], 3},
		{"max reads/round-trip", hi["busy-reads/round-trip"], 5},
	} {
		if c.have != c.want {
			t.Errorf("%s: want %v, have %v", c.name, c.want, c.have)
		}
	}
	if len(med) != 2 || len(lo) != 2 || len(hi) != 2 {
		t.Errorf("want the two metrics in each summary, have median %v, min %v, max %v", med, lo, hi)
	}
}

func TestSummarizeOfOneWindowIsThatWindow(t *testing.T) {
	med, lo, hi := summarize([]figures{{"busy-p99-ms": 46}})
	if med["busy-p99-ms"] != 46 || lo["busy-p99-ms"] != 46 || hi["busy-p99-ms"] != 46 {
		t.Fatalf("one window: want 46 as median, min and max, have %v, %v, %v", med, lo, hi)
	}
}

// fakeReading is what sample would read at second sec of a run with two
// workers, given the cumulative counters so far.
func fakeReading(sec float64, enqueued, calls int64, commands, meterCalls int64, lat, stored []time.Duration) reading {
	r := reading{
		at:             time.Unix(1000, 0).Add(time.Duration(sec * float64(time.Second))),
		redis:          redisCounters{commands: commands, calls: meterCalls, publishes: enqueued},
		cpu:            []time.Duration{time.Duration(sec * float64(100*time.Millisecond)), 0},
		rss:            []int64{10 << 20, 20 << 20},
		kidsRSS:        []int64{1 << 20, 1 << 20},
		zk:             []proxy.Counts{{Writes: int64(sec) * 5}, {Writes: int64(sec) * 2}},
		enqueued:       enqueued,
		producerCalls:  calls,
		producerCallNs: calls * int64(2*time.Millisecond),
		// The machine: 2 cores (200 ticks a second), 150 of them busy a
		// second after second 10, 50 before.
		host: hostCPU{busy: int64(50*min(sec, 10) + 150*max(sec-10, 0)), all: int64(200 * sec)},
	}
	for _, d := range lat {
		r.latency.Counts[bucketOf(d)]++
	}
	for _, d := range stored {
		r.stored.Counts[bucketOf(d)]++
	}
	return r
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func TestWindowCountsOnlyWhatHappenedInIt(t *testing.T) {
	// The workers' histogram files are cumulative: the first window's 100
	// slow starts (50 ms) must not leak into the second window's 90 fast
	// ones (2 ms).
	slow, fast := repeat(50*time.Millisecond, 100), repeat(2*time.Millisecond, 90)
	r0 := fakeReading(0, 0, 0, 0, 0, nil, nil)
	r1 := fakeReading(10, 100, 10, 1000, 1, slow, slow)
	r2 := fakeReading(20, 200, 30, 3000, 2, append(slow, fast...), append(slow, fast...))

	first, second := windowOf([]reading{r0, r1}), windowOf([]reading{r1, r2})
	if first.started != 100 || second.started != 90 {
		t.Fatalf("starts: want 100 then 90, have %d then %d", first.started, second.started)
	}
	if have := second.latency.Quantile(1); have > 3*time.Millisecond {
		t.Errorf("second window's max: want about 2ms, have %s (the first window's starts leaked in)", have)
	}
	if have := first.latency.Quantile(0.5); have < 50*time.Millisecond {
		t.Errorf("first window's p50: want about 50ms, have %s", have)
	}

	f := second.busyFigures(10, 1)
	near := func(name string, want float64) {
		t.Helper()
		if have, ok := f[name]; !ok || math.Abs(have-want) > 0.03*math.Abs(want) {
			t.Errorf("%s: want %v, have %v (present %v)", name, want, have, ok)
		}
	}
	near("busy-msgs/s", 10)                  // 100 enqueued in 10 s
	near("busy-msgs/s-of-asked", 1)          // of 10/s asked
	near("busy-started/enqueued", 0.9)       // 90 of 100
	near("busy-started/s", 9)                //
	near("busy-p50-ms", 2)                   // within a bucket (2%)
	near("busy-stored-p99-ms", 2)            //
	near("busy-redis-cmds/s", 199.9)         // 2000 commands less the meter's 1, over 10 s
	near("busy-deliveries/msg", 1)           // 100 publishes × 1 subscriber for 100 enqueues
	near("busy-producer-msgs/call", 5)       // 100 messages in 20 calls
	near("busy-producer-call-ms", 2)         //
	near("busy-zk-writes/s-max-member", 5)   // the busier member
	near("busy-cpu-%-max-worker", 10)        // 100 ms of CPU a second
	near("busy-rss-MB-max-worker", 20)       //
	near("busy-zk-requests/s-max-member", 5) //
	near("busy-host-cpu-%", 75)              // 150 of 200 ticks a second: the machine, not a core
	if first.hostPct != 25 {
		t.Errorf("first window's machine CPU: want 25%% (50 of 200 ticks a second), have %v", first.hostPct)
	}
}

func TestBusyFiguresLeaveOutRatiosOfNothing(t *testing.T) {
	r0 := fakeReading(0, 0, 0, 0, 0, nil, nil)
	r1 := fakeReading(10, 0, 0, 0, 1, nil, nil)
	f := windowOf([]reading{r0, r1}).busyFigures(10, 1)
	for _, name := range []string{"busy-started/enqueued", "busy-deliveries/msg", "busy-producer-call-ms"} {
		if v, ok := f[name]; ok {
			t.Errorf("%s with nothing enqueued: want it left out, have %v", name, v)
		}
	}
	if f["busy-msgs/s-of-asked"] != 0 {
		t.Errorf("msgs/s of asked with nothing sent: want 0, have %v", f["busy-msgs/s-of-asked"])
	}
}

func TestStageFiguresAreMeansBetweenReadings(t *testing.T) {
	st0 := stageStats{EnqueueToStart: stageStat{Count: 100, TotalMs: 10000}, ReadRounds: 10, Reads: 10}
	st1 := stageStats{EnqueueToStart: stageStat{Count: 200, TotalMs: 10300}, ReadRounds: 20, Reads: 50}
	f := stageFigures(st0, st1)
	if have := f["busy-mean-enqueue-to-start-ms"]; have != 3 {
		t.Errorf("enqueue→start: want 3 ms (300 ms over 100 starts in the window), have %v", have)
	}
	if have := f["busy-reads/round-trip"]; have != 4 {
		t.Errorf("reads per round trip: want 4, have %v", have)
	}
	if have := f["busy-mean-wake-ms"]; have != 0 {
		t.Errorf("a stage with no counts: want 0, have %v", have)
	}
}
