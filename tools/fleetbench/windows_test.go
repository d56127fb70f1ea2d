package fleetbench

import (
	"slices"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/testing/proxy"
)

// A measured window: the readings taken in it, the figures computed from
// them, and the median of several busy windows. Everything here but measure
// is pure, so that windows_figures_test.go checks it without servers.

// window holds one measured window's figures.
type window struct {
	seconds        float64
	redisCmdsPerS  float64 // the whole window, the meter's own commands subtracted
	redisWorstPart float64 // the busiest sub-window
	redisCPUPct    float64 // the Redis server's CPU, % of one core over the window
	cpuPct         float64 // the busiest worker, % of one core over the window
	cpuWorstPart   float64 // the busiest worker in the busiest sub-window
	hostPct        float64 // the machine's CPU used, % of all its cores (every process: Redis, ZooKeeper, the producer too)
	hostWorstPart  float64 // the same in the busiest sub-window
	rssMB          float64 // the largest worker, largest sample
	kidsRSSMB      float64 // the largest children total of a worker
	zkWritesPerS   float64 // the member with the most write requests
	zkWriteOpsPerS float64 // the same member's writes, counting each op in a multi
	zkRequestsPerS float64 // the member with the most requests of any kind
	zk             []proxy.Counts
	publishes      int64
	enqueued       int64
	started        int64
	producerCalls  int64 // EnqueueBatch calls in the window
	producerCallNs int64 // their total time
	latency        Snapshot
	stored         Snapshot
	redisByCommand [2]map[string]int64 // commandstats calls at the window's start and end
	redisUsec      [2]map[string]int64 // commandstats usec likewise
}

// measure samples every length/subWindows for length, starting from the
// reading from (taken just before), and returns the window's figures and
// its last reading: passed as the next call's from, windows follow each
// other back to back with nothing unmeasured in between.
func measure(b *testing.B, rm *redisMeter, ws []*worker, length time.Duration, p *producer, from reading) (window, reading) {
	b.Helper()
	part := length / subWindows
	rs := []reading{from}
	for i := 0; i < subWindows; i++ {
		time.Sleep(time.Until(from.at.Add(time.Duration(i+1) * part)))
		rs = append(rs, sample(b, rm, ws, p))
		for _, w := range ws {
			if w.exited() {
				b.Fatalf("worker %s exited during the window (see its log)", w.name)
			}
		}
	}
	w := windowOf(rs)
	first, last := rs[0].redis, rs[len(rs)-1].redis
	if n := float64(w.enqueued); n > 0 {
		b.Logf("Redis per message enqueued in the window: %.1f µs CPU of which %.1f µs system; %.2f socket reads and %.2f socket writes",
			(last.cpu-first.cpu)*1e6/n, (last.cpuSys-first.cpuSys)*1e6/n,
			float64(last.netReads-first.netReads)/n, float64(last.netWrites-first.netWrites)/n)
	}
	b.Logf("Redis commands/s in the window by command: %s", commandRates(w.redisByCommand[0], w.redisByCommand[1], w.seconds))
	b.Logf("Redis µs/s in the window by command (a script's include its commands'): %s", commandRates(w.redisUsec[0], w.redisUsec[1], w.seconds))
	for k, wk := range ws {
		suspended, lost, next, err := sessionEvents(wk.logPath, wk.logRead)
		if err != nil {
			b.Fatal(err)
		}
		wk.logRead = next
		b.Logf("%s: ZooKeeper requests/s in the window by operation: %s; its session suspended %d times, lost %d", wk.name, opRates(w.zk[k].ByOp, w.seconds), suspended, lost)
	}
	return w, rs[len(rs)-1]
}

// windowOf computes a window's figures from its readings, in order (at
// least two). Counters are differences between the first and the last
// reading; the latency histograms likewise (Snapshot.Sub), so a window
// holds only the messages started in it.
func windowOf(rs []reading) window {
	first, last := rs[0], rs[len(rs)-1]
	w := window{seconds: last.at.Sub(first.at).Seconds()}
	cmds := func(a, z reading) float64 {
		// INFO counts a command after running it: a reading includes the
		// meter's commands sent before it, not itself.
		return float64((z.redis.commands - a.redis.commands) - (z.redis.calls - a.redis.calls))
	}
	w.redisCmdsPerS = cmds(first, last) / w.seconds
	w.redisCPUPct = 100 * (last.redis.cpu - first.redis.cpu) / w.seconds
	w.hostPct = usedPct(first.host, last.host)
	w.redisByCommand = [2]map[string]int64{first.redis.byCommand, last.redis.byCommand}
	w.redisUsec = [2]map[string]int64{first.redis.usec, last.redis.usec}
	for i := 1; i < len(rs); i++ {
		secs := rs[i].at.Sub(rs[i-1].at).Seconds()
		w.redisWorstPart = max(w.redisWorstPart, cmds(rs[i-1], rs[i])/secs)
		w.hostWorstPart = max(w.hostWorstPart, usedPct(rs[i-1].host, rs[i].host))
		for k := range rs[i].cpu {
			w.cpuWorstPart = max(w.cpuWorstPart, 100*(rs[i].cpu[k]-rs[i-1].cpu[k]).Seconds()/secs)
		}
	}
	for k := range last.cpu {
		w.cpuPct = max(w.cpuPct, 100*(last.cpu[k]-first.cpu[k]).Seconds()/w.seconds)
		for _, r := range rs {
			w.rssMB = max(w.rssMB, float64(r.rss[k])/(1<<20))
			w.kidsRSSMB = max(w.kidsRSSMB, float64(r.kidsRSS[k])/(1<<20))
		}
	}
	for k := range last.zk {
		d := last.zk[k].Sub(first.zk[k])
		w.zk = append(w.zk, d)
		if wr := float64(d.Writes) / w.seconds; wr >= w.zkWritesPerS {
			w.zkWritesPerS, w.zkWriteOpsPerS = wr, float64(d.WriteOps)/w.seconds
		}
		w.zkRequestsPerS = max(w.zkRequestsPerS, float64(d.Writes+d.Reads+d.Pings+d.Other)/w.seconds)
	}
	w.publishes = last.redis.publishes - first.redis.publishes
	w.enqueued = last.enqueued - first.enqueued
	w.producerCalls = last.producerCalls - first.producerCalls
	w.producerCallNs = last.producerCallNs - first.producerCallNs
	w.latency = last.latency
	w.latency.Sub(&first.latency)
	w.stored = last.stored
	w.stored.Sub(&first.stored)
	w.started = w.latency.Total()
	return w
}

// figures are a window's metrics by name, as b.ReportMetric takes them.
type figures map[string]float64

// figures are the metrics every window has (idle and busy), each name
// with prefix in front.
func (w window) figures(prefix string) figures {
	return figures{
		prefix + "redis-cmds/s":             w.redisCmdsPerS,
		prefix + "redis-cmds/s-worst-part":  w.redisWorstPart,
		prefix + "redis-cpu-%":              w.redisCPUPct,
		prefix + "cpu-%-max-worker":         w.cpuPct,
		prefix + "cpu-%-worst-part":         w.cpuWorstPart,
		prefix + "rss-MB-max-worker":        w.rssMB,
		prefix + "lease-child-rss-MB":       w.kidsRSSMB,
		prefix + "zk-writes/s-max-member":   w.zkWritesPerS,
		prefix + "zk-write-ops/s":           w.zkWriteOpsPerS,
		prefix + "zk-requests/s-max-member": w.zkRequestsPerS,
		prefix + "host-cpu-%":               w.hostPct,
		prefix + "host-cpu-%-worst-part":    w.hostWorstPart,
	}
}

// busyFigures are a busy window's metrics (the "busy-" ones of figures and
// the load's): rate is the messages/s asked of the producer, subs the most
// subscribers any Pub/Sub channel had. A ratio whose denominator is zero
// in this window is left out rather than reported as 0 or infinity.
func (w window) busyFigures(rate int, subs int64) figures {
	f := w.figures("busy-")
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	f["busy-msgs/s"] = float64(w.enqueued) / w.seconds
	f["busy-msgs/s-of-asked"] = float64(w.enqueued) / w.seconds / float64(rate)
	f["busy-started/s"] = float64(w.started) / w.seconds
	f["busy-p50-ms"] = ms(w.latency.Quantile(0.5))
	f["busy-p99-ms"] = ms(w.latency.Quantile(0.99))
	f["busy-max-ms"] = ms(w.latency.Quantile(1))
	f["busy-stored-p50-ms"] = ms(w.stored.Quantile(0.5))
	f["busy-stored-p99-ms"] = ms(w.stored.Quantile(0.99))
	f["busy-stored-max-ms"] = ms(w.stored.Quantile(1))
	if w.enqueued > 0 {
		f["busy-redis-cmds/msg"] = w.redisCmdsPerS * w.seconds / float64(w.enqueued)
		// Redis's CPU (INFO cpu over the window) per message enqueued, in µs:
		// issue 43's robust figure for what a message costs the server.
		f["busy-redis-µs/msg"] = w.redisCPUPct / 100 * w.seconds * 1e6 / float64(w.enqueued)
		f["busy-publish/msg"] = float64(w.publishes) / float64(w.enqueued)
		f["busy-deliveries/msg"] = float64(w.publishes*subs) / float64(w.enqueued)
		f["busy-started/enqueued"] = float64(w.started) / float64(w.enqueued)
	}
	if w.producerCalls > 0 {
		// A message's enqueued_at is set when its batch is built, so a long
		// call adds to its latency.
		f["busy-producer-msgs/call"] = float64(w.enqueued) / float64(w.producerCalls)
		f["busy-producer-call-ms"] = float64(w.producerCallNs) / float64(w.producerCalls) / 1e6
	}
	return f
}

// stageFigures are the mean time of each stage of a message's way to its
// start between two readings of the workers' stage counters
// (worker.Stages): enqueue → read returned, of which the reader's queue and
// round trip, a parked loop's wake, and enqueue → start.
func stageFigures(st0, st1 stageStats) figures {
	f := figures{
		"busy-mean-enqueue-to-start-ms": meanMs(st0.EnqueueToStart, st1.EnqueueToStart),
		"busy-mean-enqueue-to-read-ms":  meanMs(st0.EnqueueToRead, st1.EnqueueToRead),
		"busy-mean-read-queued-ms":      meanMs(st0.ReadQueued, st1.ReadQueued),
		"busy-mean-read-trip-ms":        meanMs(st0.ReadTrip, st1.ReadTrip),
		"busy-mean-wake-ms":             meanMs(st0.Wake, st1.Wake),
	}
	if rounds := st1.ReadRounds - st0.ReadRounds; rounds > 0 {
		f["busy-reads/round-trip"] = float64(st1.Reads-st0.Reads) / float64(rounds)
	}
	return f
}

// summarize returns, for every metric of any window, the median over the
// windows that have it (with an even number, the mean of the middle two)
// and the smallest and largest value. The median is what a target is held
// against: one window with a stall or a quiet spell on a shared machine
// moves the min or the max, not the verdict.
func summarize(windows []figures) (median, lo, hi figures) {
	values := map[string][]float64{}
	for _, f := range windows {
		for k, v := range f {
			values[k] = append(values[k], v)
		}
	}
	median, lo, hi = figures{}, figures{}, figures{}
	for k, vs := range values {
		slices.Sort(vs)
		n := len(vs)
		median[k] = vs[n/2]
		if n%2 == 0 {
			median[k] = (vs[n/2-1] + vs[n/2]) / 2
		}
		lo[k], hi[k] = vs[0], vs[n-1]
	}
	return median, lo, hi
}

// report reports every figure under its name.
func (f figures) report(b *testing.B) {
	for k, v := range f {
		b.ReportMetric(v, k)
	}
}
