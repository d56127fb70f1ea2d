package main

// pythonClient is issue 33's Python producer figures: the drover package's
// enqueue from one thread against a bare redis-py LPUSH loop in the same
// run (examples.BenchmarkPythonEnqueue; python/bench_enqueue.py).
var pythonClient = section{
	Title: "Python client", Pkg: "./examples",
	Intro: "The Python client (`drover.Client`, docs/python.md) enqueueing from one thread against a private Redis on loopback, with Debian's /usr/bin/python3 and redis-py: " +
		"`mode=single` is `Client.enqueue`, one message per call (one EVALSHA of the enqueue script); `mode=batch100` is `Client.enqueue_many` with 100 messages per call; " +
		"`mode=lpush` is a bare redis-py `LPUSH` loop of an envelope of the same shape, in the same run: the floor any Redis-backed Python producer pays per round trip. " +
		"Each run is one Python process enqueueing 20,000 messages (100,000 in batches), timed inside the process (start-up excluded); the figure is the median of the runs.",
	Bench: "^BenchmarkPythonEnqueue$", Benchtime: "1x",
	Units: []string{"msgs/s"},
	Notes: "One message per call is one round trip either way; the enqueue script's own Redis CPU (about 40 µs per call on this loaded 2-core machine, INFO commandstats: TIME, MGET, HSETNX, ZADD, SET and the wake-up PUBLISH) is what a lone Python enqueue pays above a bare LPUSH; the client's own Python work is about 18 µs per message. Batches of 100 amortise both and run faster than the bare LPUSH loop.",
	Targets: []target{
		{"batches of 100 ≥ 8,000 msgs/s from one thread", "BenchmarkPythonEnqueue/mode=batch100", "msgs/s", ">=", 8000},
	},
}
