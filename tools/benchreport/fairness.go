package main

// fairness is issue 31's fairness figure (e2e/fairness_bench_test.go),
// measured only: one in-process worker on real Redis and real fenced
// ZooKeeper claims.
var fairness = section{
	Title: "Fairness", Pkg: "./e2e",
	Bench: "^BenchmarkFairness$", Benchtime: "1x", Count: 1,
	Intro: "One in-process worker (capacity 32) kept at full capacity by one queue with a backlog of 100,000 (concurrency 32, an inline handler holding its slot 20 ms), beside 1,000 queues (concurrency 1) that each receive one message a second from 8 producers spreading the enqueues evenly over the second. After a 5 s warm-up, over `window-s`: the light queues' enqueue→start latency (`p50-ms`, `p99-ms`, `max-ms`; the message's position is its enqueue time by Redis's clock, read in the handler), `light-starts/s` (1,000 when every light message started), the heavy queue's `heavy-starts/s` and the slots it kept busy on average (`heavy-slots`). The same window is measured first with the light queues alone (`alone-p50-ms`, `alone-p99-ms`: same producers, same wake-up path, no heavy queue), so that what the heavy queue adds is the difference; `wake-ms`, `read-queued-ms`, `read-trip-ms` (and `alone-…`) are the worker's own stage means over each window (/debug/state \"stages\": a parked queue's signal → its goroutine runs; a read handed to the reader → sent; the reader's round trip). Quick run: `DROVER_FAIRBENCH_QUEUES`, `DROVER_FAIRBENCH_BACKLOG`, `DROVER_FAIRBENCH_WINDOW` (seconds), `DROVER_FAIRBENCH_CAPACITY`.",
	Units: []string{"light-queues", "heavy-backlog", "capacity", "window-s", "light-starts/s", "heavy-starts/s", "heavy-slots", "p50-ms", "p99-ms", "max-ms", "alone-p50-ms", "alone-p99-ms", "wake-ms", "alone-wake-ms", "read-queued-ms", "alone-read-queued-ms", "read-trip-ms", "alone-read-trip-ms", "enqueue-errors"},
	Targets: []target{
		{"light queues' enqueue→start p99 ≤ 100 ms beside a backlog of 100,000", "BenchmarkFairness", "p99-ms", "<=", 100},
	},
	Notes: "How to read a miss: `alone-p99-ms` is the same light load without the heavy queue. When it misses too, the machine (its load: the run's header) is the cause, not the heavy queue. Otherwise compare the stage means: a read path slowed by the heavy queue's CPU (`read-trip-ms`, `read-queued-ms` against `alone-…`) versus waiting for a slot. The pool hands a freed slot to a waiting queue with none running first (worker/pool.go), so a light queue waits at most for the next release while the heavy queue fills the worker.",
}
