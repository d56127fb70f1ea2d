package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// nodeVsBullMQ is issue 44's comparison (e2e/bullmq_bench_test.go and
// clients/node/bench/bench.mjs): the Node client and pooled Node handlers
// against BullMQ from npm, on the same private Redis in the same run.
var nodeVsBullMQ = section{
	Title: "Node client against BullMQ", Pkg: "./e2e",
	Bench: "^BenchmarkNodeVsBullMQ$", Benchtime: "1x",
	Intro: "Issue 44: the Node client (clients/node) and pooled Node handlers against BullMQ, both with their default settings, on one private Redis and one ioredis (the versions below, locked in clients/node/bench/package-lock.json; `make deps` installs them). " +
		"Every pair runs in the same benchmark run in the order Drover, BullMQ, BullMQ, Drover, so that a change of the machine's load falls on both; `drover/bullmq` is the ratio of the two rates of that run, and the table shows its median over the runs. " +
		"`enqueue/callers=N`: one Node process (clients/node/bench/bench.mjs) calling Drover's `Client.enqueue(queue, \"send\", {user: 42, text: \"hello\"})` or BullMQ's `Queue.add(\"send\", same)` from N concurrent async callers sharing the one client (5,000 messages from one caller, 10,000 from eight, per turn), timed inside the process after a first call that loads the scripts. " +
		"`noop/concurrency=16`: an async no-op handler at concurrency 16: Drover's pooled Node children (`node noop.mjs` with `pool {}`, served by `@drover-dev/drover/pool`'s `main()`; an in-process worker with 16 slots, the children started and their code compiled by 16,000 tasks on a queue that keeps the pool open) against a BullMQ `Worker` with `concurrency: 16` in one Node process, each on 5,000 jobs added beforehand; BullMQ's clock starts at its 1,000th completed job (connected and compiled, as the Drover children are), Drover's at the queue's start and it stops when the committed offset covers the last message. " +
		"`cpu-µs` is CPU per message or task of the Node side (Drover: the worker process and its pooled children; BullMQ: its one process), `redis-µs` the Redis server's own (INFO cpu), both over the timed window: the robust figures on a shared machine. " +
		"`pertask/concurrency=16`: the same handler as one Node process per task (100 tasks), for reference.",
	Units: []string{
		"drover-msgs/s", "bullmq-msgs/s", "drover-cpu-µs/msg", "bullmq-cpu-µs/msg", "drover-redis-µs/msg", "bullmq-redis-µs/msg",
		"drover-tasks/s", "bullmq-tasks/s", "drover-cpu-µs/task", "drover-children-cpu-µs/task", "bullmq-cpu-µs/task", "drover-redis-µs/task", "bullmq-redis-µs/task",
		"drover/bullmq",
	},
	Targets: []target{
		{"enqueue from one caller: Drover client ≥ 1.0 × BullMQ Queue.add", "BenchmarkNodeVsBullMQ/enqueue/callers=1", "drover/bullmq", ">=", 1},
		{"enqueue from eight concurrent callers: Drover client ≥ 1.0 × BullMQ Queue.add", "BenchmarkNodeVsBullMQ/enqueue/callers=8", "drover/bullmq", ">=", 1},
	},
	Notes:    "No target was set for the handlers; the issue asks for the ratio and CPU per task. Read `tasks/s` × `cpu-µs/task` to see whether a side was bound by CPU or by waiting: a BullMQ worker fetches and completes each job with script calls of its own, at most 16 in flight, where a Drover worker reads the log in batches. Where the pooled children's CPU goes: every task wakes one of 16 Node processes (a frame read, the handler, a frame written), where BullMQ calls the processor in its one event loop, and V8 compiles a child's task path only after it has run it a few thousand times, so each child pays that warm-up alone (one child driven alone in a loop on this machine: about 100 µs a task over its first 1,000 tasks, 10–25 µs after 3,000). Drover's worker side (`drover-cpu-µs/task` less the children's) is the Go runtime's pooled path, the same for any language.",
	Versions: nodeVersions,
}

// nodeVersions names node and the BullMQ and ioredis that the bench
// package installed (what ran).
func nodeVersions() string {
	node := "node not found"
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		node = "Node " + strings.TrimSpace(string(out))
	}
	version := func(pkg string) string {
		data, err := os.ReadFile(filepath.Join("clients", "node", "bench", "node_modules", pkg, "package.json"))
		var p struct{ Version string }
		if err != nil || json.Unmarshal(data, &p) != nil || p.Version == "" {
			return pkg + " not installed"
		}
		return pkg + " " + p.Version
	}
	return fmt.Sprintf("%s; %s; %s.", node, version("bullmq"), version("ioredis"))
}
