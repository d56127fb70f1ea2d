package main

// metricsBudget is issue 34's metrics budget: the size and cost of one
// worker's /metrics when it owns 1,000, 10,000 and 25,000 queues that each
// had work in the last hour (metrics.BenchmarkScrapeManyQueues).
var metricsBudget = section{
	Title: "Metrics budget", Pkg: "./metrics",
	Intro: "One worker's `/metrics` (the metrics Registry's handler with the binary's sinks: Prometheus and the in-memory dump) after `queues=N` queues each ran 3 tasks in the last hour and published their backlog gauges. " +
		"It drives the metrics layer directly with the Recorder calls a worker makes per task, commit and backlog read (worker/task.go, commit.go, backlog.go), not subprocesses: the scrape is the same. " +
		"The queue names match no `metrics.groups` pattern and have no `:` (the worst case: `metrics.max_groups`, 50, is reached and the rest go to `_other`); the detail is the default (at most 100 queues). " +
		"`series` counts the `drover_*` samples, `all-series` every sample (with `go_*` and `process_*`), `bytes` the uncompressed body; an op is one scrape. Before the budget the same worker served 45,465 series and 3.0 MB with 1,000 queues (issue 34).",
	Bench: "^BenchmarkScrapeManyQueues$", Benchtime: "20x",
	Units: []string{"series", "all-series", "bytes", "ms/scrape"},
	Targets: []target{
		{"series at 25,000 queues within the budget (≤ 3,000, as at 1,000)", "BenchmarkScrapeManyQueues/queues=25000", "series", "<=", 3000},
		{"scrape ≤ 1 MB at 25,000 queues", "BenchmarkScrapeManyQueues/queues=25000", "bytes", "<=", 1e6},
		{"scrape ≤ 100 ms at 25,000 queues", "BenchmarkScrapeManyQueues/queues=25000", "ms/scrape", "<=", 100},
	},
}
