package main

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
)

// fleetRuntime is issue 14's idle and busy runtime figures: real `drover
// worker` processes, measured by tools/fleetbench (docs/benchmarks.md,
// "Fleet runtime"). One run of several minutes: the idle figures are one
// window's (the "worst part" ones its busiest sixth), each busy figure the
// median over several back-to-back windows, their spread in the table.
var fleetRuntime = section{
	Title: "Fleet runtime: idle and busy queues on worker processes",
	Pkg:   "./tools/fleetbench", Bench: "^BenchmarkFleetRuntime$", Benchtime: "1x", Count: 1, Windows: "busy-windows",
	Intro: "Four `drover worker` processes (the binary built with `-tags droverbench`, which adds two inline handlers and nothing else) on a private ZooKeeper and Redis, each member's ZooKeeper connection through a proxy that counts its requests by kind. " +
		"Queues are registered in bulk (`coordinator.Queues.CreateMany`); the run waits until the workers' `/debug/state?queues=names` (the names-only form, so that the worker does not build megabytes of JSON for the harness) together list every queue exactly once. " +
		"Goroutines per worker are read first with 1,000 queues (`small-queues`), then with 100,000 (`goroutines-full/small`: the largest growth of one worker). " +
		"**Idle**: once every worker is quiet (under 10% of a core over 5 s; `settle-s`, 10–45 s after the fleet runs every queue), one window (`window-s`) with 100,000 empty queues: Redis commands/s of the whole fleet from `INFO stats` `total_commands_processed` (the harness's own INFO calls subtracted; commands inside scripts count too), CPU per worker from `/proc/<pid>/stat` utime+stime, RSS from `VmRSS` (the worker; `lease-child` is its task-lease supervisor process), the live heap of the largest worker after the window (`idle-live-heap-MB-max-worker`: `HeapAlloc` of its `/debug/pprof/heap?gc=1`, right after a collection; RSS runs above it by the GC's headroom), ZooKeeper requests per member from the proxies. " +
		"**Busy**: an open-loop producer in the harness sends 10,000 messages/s spread evenly over 10,000 of those queues (1 message/s each; `EnqueueBatch` from four goroutines, each batch what came due since the last); the inline `bench.stamp` handler counts `time.Since(enqueued_at)` at its start in a histogram in the worker (2% buckets, written to a file five times a second), so p50/p99/max are enqueue → handler start over every message of a window. " +
		"The busy phase is `busy-windows` windows of `window-s` each, back to back with the producer running throughout (3 by default, `DROVER_FLEETBENCH_BUSY_WINDOWS`), after a start of up to 5 s: **every busy figure is the median over the windows** (with two windows, their mean), each window's quantiles from the difference of the histogram files at its ends and its stage means likewise, and the last column of the table gives the smallest and largest window (`1 run × 3 windows (min – max)`); one window cannot say whether a p50 of 5 or of 11 ms is typical. `busy-drain-s` and `busy-max-subscribers` are measured once, after the last window; the test log has one line per window. " +
		"`enqueued_at` is set when the producer builds its batch, so these include the producer's own call (`busy-producer-call-ms`, `busy-producer-msgs/call`: a call that runs long delays every message of its batch); `busy-stored-p50/p99/max-ms` are the same starts measured from each message's position (Redis `TIME` when the enqueue script stored it), the runtime's part alone: wake-up, read, dispatch. " +
		"The workers' stage counters (`/debug/state` `stages`: a count and a total per stage, a clock read and two atomic adds per message) give the means over each window: `busy-mean-enqueue-to-start-ms` (from the position), of which `busy-mean-enqueue-to-read-ms` to the read's return, `busy-mean-read-queued-ms` waiting for a read round trip (the worker keeps two in flight, the reads that wait go together in the next), `busy-mean-read-trip-ms` the round trip, `busy-mean-wake-ms` a parked loop's start after its wake-up; `busy-reads/round-trip` is how many queue reads one round trip carried. `busy-redis-cmds/msg` is every Redis command of the window (scripts' commands included) per message enqueued. " +
		"`busy-started/enqueued` is handler starts against messages enqueued in the window, `busy-drain-s` how long the workers took to start the last message after the producer stopped. " +
		"ZooKeeper writes count requests (a multi is one; `zk-write-ops/s` counts the operations inside). " +
		"Pub/Sub: `busy-publish/msg` is `PUBLISH`+`SPUBLISH` calls (`INFO commandstats`, calls from the enqueue script included) per message enqueued; `busy-deliveries/msg` multiplies it by the most subscribers any channel had (`PUBSUB NUMSUB`), an upper bound on deliveries. `busy-redis-cpu-%` is the Redis server's CPU (`INFO cpu`, user + system) over the window, in % of one core; `idle-host-cpu-%` and `busy-host-cpu-%` the whole machine's (`/proc/stat`: every process, Redis, ZooKeeper, the producer and the harness included), in % of all its cores, `busy-host-cpu-%-worst-part` its busiest sixth of a window: a machine near 100% queues every process behind the others, and the latency with them. " +
		"The figures include what the producer and the harness take from the same 2 cores. Smaller sizes for a quick check: `DROVER_FLEETBENCH_SIZE=quick` (4 × 2,000 idle, 500 busy at 500/s, 10 s windows, two busy ones), or any of `DROVER_FLEETBENCH_{WORKERS,SMALL_QUEUES,QUEUES,BUSY_QUEUES,RATE,WINDOW,BUSY_WINDOWS,SETTLE,SETTLE_MAX}`; the sizes used are in the table (`queues`, `busy-queues`, `msgs/s-asked`, `window-s`, `busy-windows`).",
	Units: []string{
		"workers", "small-queues", "queues", "busy-queues", "msgs/s-asked", "window-s", "busy-windows", "converge-s", "settle-s",
		"goroutines-small", "goroutines-full", "goroutines-full/small",
		"idle-redis-cmds/s", "idle-redis-cmds/s-worst-part", "idle-cpu-%-max-worker", "idle-cpu-%-worst-part",
		"idle-rss-MB-max-worker", "idle-live-heap-MB-max-worker", "idle-lease-child-rss-MB", "idle-zk-requests/s-max-member", "idle-zk-writes/s-max-member", "idle-host-cpu-%",
		"busy-msgs/s", "busy-msgs/s-of-asked", "busy-started/s", "busy-started/enqueued", "busy-drain-s",
		"busy-p50-ms", "busy-p99-ms", "busy-max-ms", "busy-stored-p50-ms", "busy-stored-p99-ms", "busy-stored-max-ms",
		"busy-producer-call-ms", "busy-producer-msgs/call",
		"busy-mean-enqueue-to-start-ms", "busy-mean-enqueue-to-read-ms", "busy-mean-read-queued-ms", "busy-mean-read-trip-ms", "busy-mean-wake-ms", "busy-reads/round-trip",
		"busy-zk-writes/s-max-member", "busy-zk-write-ops/s", "busy-zk-requests/s-max-member",
		"busy-publish/msg", "busy-max-subscribers", "busy-deliveries/msg",
		"busy-redis-cmds/s", "busy-redis-cmds/msg", "busy-redis-cpu-%", "busy-redis-µs/msg", "busy-cpu-%-max-worker", "busy-host-cpu-%", "busy-host-cpu-%-worst-part", "busy-rss-MB-max-worker", "busy-lease-child-rss-MB",
	},
	Targets: []target{
		{"idle: Redis commands/s of the whole fleet ≤ 1,000", "BenchmarkFleetRuntime", "idle-redis-cmds/s", "<=", 1000},
		{"idle: CPU of each worker ≤ 5% of a core", "BenchmarkFleetRuntime", "idle-cpu-%-max-worker", "<=", 5},
		{"idle: RSS of each worker ≤ 150 MB", "BenchmarkFleetRuntime", "idle-rss-MB-max-worker", "<=", 150},
		{"idle: goroutines per worker independent of owned queues (100× the queues: ≤ 1.25× the goroutines)", "BenchmarkFleetRuntime", "goroutines-full/small", "<=", 1.25},
		{"busy: the producer sends the asked rate (≥ 98%)", "BenchmarkFleetRuntime", "busy-msgs/s-of-asked", ">=", 0.98},
		{"busy: the workers keep up (starts ≥ 98% of enqueues in a window)", "BenchmarkFleetRuntime", "busy-started/enqueued", ">=", 0.98},
		{"busy: the workers keep up (the last message starts ≤ 1 s after the producer stops)", "BenchmarkFleetRuntime", "busy-drain-s", "<=", 1},
		{"busy: enqueue → start p50 < 10 ms", "BenchmarkFleetRuntime", "busy-p50-ms", "<=", 10},
		{"busy: enqueue → start p99 < 100 ms", "BenchmarkFleetRuntime", "busy-p99-ms", "<=", 100},
		{"busy: ZooKeeper write requests ≤ 25/s per member", "BenchmarkFleetRuntime", "busy-zk-writes/s-max-member", "<=", 25},
		{"busy: Redis Pub/Sub deliveries per enqueue ≤ 1", "BenchmarkFleetRuntime", "busy-deliveries/msg", "<=", 1},
		{"busy: Redis commands per message ≤ 6 (issue 43)", "BenchmarkFleetRuntime", "busy-redis-cmds/msg", "<=", 6},
		{"busy: Redis CPU per message ≤ 25 µs (issue 43)", "BenchmarkFleetRuntime", "busy-redis-µs/msg", "<=", 25},
	},
}

// fleetRuntimeSparse is the same fleet and rate over five times the busy
// keys (BenchmarkFleetRuntimeSparse: 50,000 keys × 0.2 messages/s), with
// the same targets: issue 43's second busy fleet.
var fleetRuntimeSparse = func() section {
	s := fleetRuntime
	s.Title = "Fleet runtime, sparse: 50,000 busy keys at 0.2 messages/s each"
	s.Bench = "^BenchmarkFleetRuntimeSparse$"
	s.Intro = "The Fleet runtime section's fleet, harness and figures, with its 10,000 messages/s spread over 50,000 of the 100,000 queues (0.2 messages/s each, `BenchmarkFleetRuntimeSparse`; `DROVER_FLEETBENCH_BUSY_QUEUES` overrides the five times): a message is more often alone on its queue, so its read, start, outcome record, trim and backlog gauges are its own."
	s.Targets = make([]target, len(fleetRuntime.Targets))
	for i, t := range fleetRuntime.Targets {
		t.Bench = "BenchmarkFleetRuntimeSparse"
		s.Targets[i] = t
	}
	return s
}()

// fleetRuntimeSection runs the fleet runtime benchmark and renders it. A
// run that fails (a fleet that never converges, a worker that dies) is
// reported with its error instead of ending the whole report.
func fleetRuntimeSection(s section, count int) string {
	res, cmdline, err := runGoBench(s, count)
	if env := envWithPrefix("DROVER_FLEETBENCH_"); env != "" {
		cmdline = env + " " + cmdline
	}
	var b strings.Builder
	if err != nil {
		fmt.Fprintf(&b, "## %s\n\n%s\n\n`%s`\n\n**The run failed:**\n\n```\n%s\n```\n\n| target | measured (median) | verdict |\n|---|---:|---|\n", s.Title, s.Intro, cmdline, failureLines(err.Error()))
		for _, t := range s.Targets {
			fmt.Fprintf(&b, "| %s | — | NOT MEASURED (the run failed) |\n", t.Label)
		}
		b.WriteString("\n")
		return b.String()
	}
	render(&b, s, res, cmdline)
	if why := fleetRuntimeWhy(s, res[strings.Trim(s.Bench, "^$")]); why != "" {
		fmt.Fprintf(&b, "What the figures of this run say about each missed target:\n\n%s\n", why)
	}
	fmt.Fprintf(&b, "What moved the Redis work per message (issue 43), met or not:\n\n%s\n", busyRedisAB)
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(&b, "Load average when the section ended: %s.\n\n", strings.Join(strings.Fields(string(load))[:3], " "))
	}
	return b.String()
}

// fleetRuntimeWhy explains each missed target of the run from its other
// figures: what grows with the queues, how many queues a ZooKeeper request
// carries, what the machine was doing. Empty when every target is met.
func fleetRuntimeWhy(s section, fig map[string][]float64) string {
	v := func(unit string) float64 {
		if vs := fig[unit]; len(vs) > 0 {
			return median(vs)
		}
		return 0
	}
	missed := func(unit string) bool {
		for _, t := range s.Targets {
			if t.Unit == unit && len(fig[unit]) > 0 {
				return !t.met(median(fig[unit]))
			}
		}
		return false
	}
	// windows is a busy figure's range over the windows, when the run
	// reports one: a miss in every window is not a miss in one.
	windows := func(unit string) string {
		lo, hi := fig[unit+"-min"], fig[unit+"-max"]
		if len(lo) == 0 || len(hi) == 0 {
			return ""
		}
		return fmt.Sprintf(" (windows %s – %s)", format(slices.Min(lo)), format(slices.Max(hi)))
	}
	queues, workers := v("queues"), max(v("workers"), 1)
	perWorker := queues / workers
	var b strings.Builder
	if missed("idle-redis-cmds/s") {
		fmt.Fprintf(&b, "* Idle Redis commands: %s commands/s for %s empty queues is %s per 1,000 queues — a cost that grows with the queues, not with work (per-queue polling or per-queue gauges).\n",
			format(v("idle-redis-cmds/s")), format(queues), format(v("idle-redis-cmds/s")/queues*1000))
	}
	if missed("idle-cpu-%-max-worker") {
		fmt.Fprintf(&b, "* Idle CPU: the busiest worker used %s%% of a core (%s%% in its busiest sixth of the window) with about %s empty queues; the fleet sent Redis %s commands/s and each member up to %s ZooKeeper requests/s meanwhile.\n",
			format(v("idle-cpu-%-max-worker")), format(v("idle-cpu-%-worst-part")), format(perWorker), format(v("idle-redis-cmds/s")), format(v("idle-zk-requests/s-max-member")))
	}
	if missed("idle-rss-MB-max-worker") {
		fmt.Fprintf(&b, "* Idle RSS: %s MB for about %s queues per worker is %s KB per owned queue.\n",
			format(v("idle-rss-MB-max-worker")), format(perWorker), format(v("idle-rss-MB-max-worker")*1024/perWorker))
	}
	if missed("goroutines-full/small") {
		fmt.Fprintf(&b, "* Goroutines: %s per worker with %s queues in the fleet, %s with the small fleet — they grow with the owned queues (one more per owned queue would give %s).\n",
			format(v("goroutines-full")), format(queues), format(v("goroutines-small")), format(v("goroutines-small")+(queues-v("small-queues"))/workers))
	}
	if missed("busy-msgs/s-of-asked") {
		fmt.Fprintf(&b, "* Producer: it reached %s of the %s messages/s asked; Redis processed %s commands/s in all meanwhile, and the workers' CPU peaked at %s%% of a core each, on 2 shared cores.\n",
			format(v("busy-msgs/s")), format(v("msgs/s-asked")), format(v("busy-redis-cmds/s")), format(v("busy-cpu-%-max-worker")))
	}
	if missed("busy-started/enqueued") || missed("busy-drain-s") {
		fmt.Fprintf(&b, "* Keeping up: the workers started %s messages/s against %s enqueued (ratio %s%s) and needed %s s after the producer stopped to start the last one; the busiest worker used %s%% of a core.\n",
			format(v("busy-started/s")), format(v("busy-msgs/s")), format(v("busy-started/enqueued")), windows("busy-started/enqueued"), format(v("busy-drain-s")), format(v("busy-cpu-%-max-worker")))
	}
	if missed("busy-p50-ms") || missed("busy-p99-ms") {
		fmt.Fprintf(&b, "* Latency: p50 %s ms%s, p99 %s ms%s, max %s ms with the busiest worker at %s%% of a core and Redis at %s commands/s and %s%% of a core (producer included); the machine's CPU was %s%% used%s over its cores (every process), %s%% in the busiest sixth of a window.\n",
			format(v("busy-p50-ms")), windows("busy-p50-ms"), format(v("busy-p99-ms")), windows("busy-p99-ms"), format(v("busy-max-ms")), format(v("busy-cpu-%-max-worker")), format(v("busy-redis-cmds/s")), format(v("busy-redis-cpu-%")),
			format(v("busy-host-cpu-%")), windows("busy-host-cpu-%"), format(v("busy-host-cpu-%-worst-part")))
	}
	if missed("busy-zk-writes/s-max-member") {
		w, ops := v("busy-zk-writes/s-max-member"), v("busy-zk-write-ops/s")
		perReq := 0.0
		if w > 0 {
			perReq = ops / w
		}
		fmt.Fprintf(&b, "* ZooKeeper writes: the busiest member sent %s write requests/s carrying %s write operations/s (%s per request) for about %s busy queues — ",
			format(w), format(ops), format(perReq), format(v("busy-queues")/workers))
		if perReq < 2 {
			b.WriteString("offset commits are not coalesced across queues (one request per queue commit).\n")
		} else {
			b.WriteString("commits are coalesced, but the commit interval allows more requests than the target.\n")
		}
	}
	if missed("busy-redis-cmds/msg") || missed("busy-redis-µs/msg") {
		fmt.Fprintf(&b, "* Redis work per message: %s commands and %s µs of Redis CPU (%s%% of a core at %s messages/s); the producer's enqueue is 3 commands a message (HSETNX, SET … GET, ZADD) and, per batch of %s messages, one enqueue-spread call and one PUBLISH per owner (%s PUBLISH a message; the GET of the owner's route only when the producer's kept route is 30 s old or reached nobody), the worker's outcome record (one HSET into its noted bucket) 1 more, a share of a trim (every 16 messages or 30 s of a key) and of the backlog gauges (a caught-up key's once a minute) the rest, with a read only when the wake-up did not carry the message and a start record only when its task outlived the 10 ms hold (docs/decisions.md, \"Issue 43: a fleet's batch in one call, its wake-ups one per owner\", \"where ≤ 6 commands a message stands\").\n",
			format(v("busy-redis-cmds/msg")), format(v("busy-redis-µs/msg")), format(v("busy-redis-cpu-%")), format(v("busy-msgs/s")), format(v("busy-producer-msgs/call")), format(v("busy-publish/msg")))
	}
	if missed("busy-deliveries/msg") {
		fmt.Fprintf(&b, "* Pub/Sub: %s PUBLISH calls per message, and a channel with %s subscribers: every subscriber of a channel receives each publish.\n",
			format(v("busy-publish/msg")), format(v("busy-max-subscribers")))
	}
	return b.String()
}

// envWithPrefix is the settings of this run in variables whose names start
// with prefix (DROVER_FLEETBENCH_), for the command line shown with the
// figures.
func envWithPrefix(prefix string) string {
	var kv []string
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, prefix) {
			kv = append(kv, e)
		}
	}
	sort.Strings(kv)
	return strings.Join(kv, " ")
}

// failureLines picks the benchmark's own messages out of a failed run's
// output (the b.Fatal line and what it logged), at most 30 lines.
func failureLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if strings.Contains(t, "_test.go:") || strings.HasPrefix(t, "--- FAIL") || strings.HasPrefix(t, "panic:") || strings.Contains(t, "[ERROR]") {
			keep = append(keep, t)
		}
	}
	if len(keep) == 0 {
		keep = strings.Split(strings.TrimSpace(out), "\n")
	}
	if len(keep) > 30 {
		keep = keep[len(keep)-30:]
	}
	return strings.Join(keep, "\n")
}

// busyRedisAB is what moved the busy fleet's Redis work per message, each
// change judged against its parent in one alternated run of the A/B tool
// (go run ./tools/abtool; the commands and sizes are in the decisions
// named): written beside the figures, as issue 43 asks.
const busyRedisAB = "* A/B of each change against its parent (`tools/abtool`, alternated, medians of 3 with spreads; docs/decisions.md): the noted bucket's marker, 10,000 keys × 1/s: commands 8.29 → 7.29 (disjoint), Redis µs 26.82 → 24.19 (spreads overlap: not measured); the producer's kept route, 10,000 × 1/s: commands 7.29 → 6.32 (disjoint), Redis µs not measured (overlap); both against the session's start, 10,000 × 1/s: commands 8.30 → 6.32 (disjoint), Redis µs 24.65 → 21.01 (overlap), 30,000 × 0.2/s: commands 8.65 → 6.89 (disjoint), Redis µs 31.17 → 31.14 (the same); the earlier cuts: a quiet key's log trimmed by what it owes (30,000 × 0.2/s: commands 13.38 → 11.51, Redis µs 41.0 → 37.9), records-only requests in `record-many` (10,000 × 1/s: Redis µs 29.50 → 28.27), a caught-up queue's gauges without a read (10,000 × 1/s: commands 9.73 → 8.93, Redis µs 32.34 → 30.07), all disjoint.\n"
