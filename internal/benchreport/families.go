package main

// queueFamilies is issue 31's queue families figures
// (internal/fleetbench/family_bench_test.go): a real fleet of worker
// processes registering queues at their first enqueue.
var queueFamilies = section{
	Title: "Queue families", Pkg: "./internal/fleetbench",
	Bench: "^BenchmarkQueueFamilies$", Benchtime: "1x", Count: 3,
	Intro: "4 `drover worker` processes (each through a counting ZooKeeper proxy) on a private ZooKeeper and Redis, one family (prefix `f-`, an inline `bench.stamp` handler). Producers enqueue one message into each of 100,000 names never seen before, at 1,000 new queues/s (open loop, `EnqueueBatch` every 10 ms): no queue is created by a command; the rebalance leader's registrar hears each first enqueue on the unowned wake-up channel and registers the queues in batches. `first-start-p50/p99-ms`: first enqueue → first task start (the queue's only message; the workers' bench.stamp histograms). `zk-write-requests/new-queue` and `zk-write-ops/new-queue` (ops inside multis counted one by one): every worker's ZooKeeper writes from the first enqueue until every queue ran (registration, assignment, claims, first commits), per new queue. Then, once every queue ran, the fleet is left alone until every worker is quiet (under 10% of a core over 5 s; `settle-s`) and measured idle for one 30 s window, with the Fleet runtime section's method and targets (`idle-*`: Redis commands/s of the whole fleet, CPU and RSS of the busiest worker, ZooKeeper requests per member); `goroutines-full/empty` is the largest ratio of a worker's goroutines then to its goroutines before the first enqueue. Median of 3 runs (each about 3.5 minutes). Quick run: `DROVER_FAMILYBENCH_QUEUES` (e.g. 3000), `DROVER_FAMILYBENCH_RATE`, `DROVER_FAMILYBENCH_WORKERS`, `DROVER_FAMILYBENCH_IDLE_WINDOW` (0s skips the idle phase).",
	Units: []string{"new-queues", "new-queues/s-asked", "new-queues/s-sent", "registered", "registered-%", "first-tasks-started", "first-start-p50-ms", "first-start-p99-ms", "drain-after-last-s", "zk-write-requests/new-queue", "zk-write-ops/new-queue",
		"settle-s", "idle-redis-cmds/s", "idle-cpu-%-max-worker", "idle-rss-MB-max-worker", "idle-zk-requests/s-max-member", "idle-zk-writes/s-max-member", "goroutines-full", "goroutines-full/empty"},
	Targets: []target{
		{"a new queue's first task starts within 2 s of its first enqueue (p99)", "BenchmarkQueueFamilies", "first-start-p99-ms", "<=", 2000},
		{"every new queue registered", "BenchmarkQueueFamilies", "registered-%", ">=", 100},
		{"idle with the 100,000 family queues: Redis commands/s of the whole fleet ≤ 1,000 (the Fleet runtime section's target)", "BenchmarkQueueFamilies", "idle-redis-cmds/s", "<=", 1000},
		{"idle with them: CPU of each worker ≤ 5% of a core", "BenchmarkQueueFamilies", "idle-cpu-%-max-worker", "<=", 5},
		{"idle with them: RSS of each worker ≤ 150 MB", "BenchmarkQueueFamilies", "idle-rss-MB-max-worker", "<=", 150},
		{"idle with them: goroutines per worker ≤ 1.25× those before the first enqueue", "BenchmarkQueueFamilies", "goroutines-full/empty", "<=", 1.25},
	},
	Notes: "Quick run (3,000 new queues at 1,000/s, 5 runs) on 2026-11-27 04:39 UTC with the load average at 31–61: p50 1.8 s, p99 2.6 s (2.2–4.8), 0.87 write requests and 4.8 write ops per new queue. What remains of the first start is the registration write (one multi per registry bucket per batch, up to 1–2 s under load) and the rebalance's settle, assignment and claim, each batched (docs/decisions.md, \"Queue families (issue 31)\"). The idle figures of the Fleet runtime section with these 100,000 queues are not measured here yet (the family's queues are ordinary registered queues once registered, so the Fleet runtime section's idle figures at 100,000 registered queues apply).",
}
