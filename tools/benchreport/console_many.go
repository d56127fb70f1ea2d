package main

// consoleManyQueues is issue 34's console at 100,000 queues
// (web.BenchmarkConsoleManyQueues).
var consoleManyQueues = section{
	Title: "Web console at 100,000 queues", Pkg: "./web",
	Intro: "100,000 configured queues in ten groups of 10,000 (`g3-04711`), one message each, on the real ZooKeeper and Redis, behind the real handler (token auth, rendering) with the server's `Run` loop (no workers own the queues: the console's reads are the same). " +
		"`snapshot-ms` is one full read of the fleet, which `Run` does in the background (web.Config.ServeStale); `overview-ms` and `lagging-ms` (the top-lagging view, `/queues?view=lagging`) are answered from that snapshot; `search-ms` is `/queues?match=<prefix>`, which lists the names (registry buckets and the Redis set) and reads only the matches. " +
		"`bulk-pause-ms` is `POST /api/v1/bulk/pause` of one group selected by prefix (`bulk-queues`, 10,000), written as ZooKeeper multis of up to 1,000 flags (coordinator.Pauses.SetQueues), audited once; the benchmark counts the pause flags afterwards. " +
		"One run: each builds the 100,000 queues afresh (2–3 minutes here). `DROVER_BENCH_CONSOLE_QUEUES=2000` runs it at a quick size.",
	Bench: "^BenchmarkConsoleManyQueues$", Benchtime: "1x", Count: 1,
	Units: []string{"queues", "snapshot-ms", "overview-ms", "lagging-ms", "search-ms", "bulk-pause-ms", "bulk-queues"},
	Targets: []target{
		{"overview ≤ 1 s at 100,000 queues", "BenchmarkConsoleManyQueues", "overview-ms", "<=", 1000},
		{"top-lagging view ≤ 1 s at 100,000 queues", "BenchmarkConsoleManyQueues", "lagging-ms", "<=", 1000},
		{"search by prefix ≤ 1 s at 100,000 queues", "BenchmarkConsoleManyQueues", "search-ms", "<=", 1000},
	},
	Notes: "The overview and the views answer from a snapshot at most `ServeStale` (2 min) old, or any while a new one is being read, refreshed in the background; the snapshot's own read (`snapshot-ms`) grows with the queues (one offset read per queue in ZooKeeper, pipelined; the backlog pipelined in Redis) and is what the first request after start waits for. A search and a bulk action read the names afresh.",
}
