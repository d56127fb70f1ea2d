// Command benchreport runs Drover's benchmarks and rewrites BENCHMARKS.md:
// `make bench`. Each Go benchmark runs -count 5 (or the section's count) and
// every figure is the median of those runs; pairs that an issue compares
// (Drover against a bare spawn loop, against asynq) are measured in the same
// run. Targets an issue sets are checked and a missed one is marked MISSED,
// never hidden.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/localserver"
)

func main() {
	out := flag.String("out", "BENCHMARKS.md", "file to write")
	only := flag.String("only", "", "run only sections whose title contains this")
	count := flag.Int("count", 5, "runs per benchmark (the median is reported)")
	peers := flag.Bool("peers", true, "run the bench/ module (Drover against asynq, and scale)")
	merge := flag.Bool("merge", false, "with -only: replace only the sections run in the existing -out file, keeping the others (each replaced section names its own run)")
	flag.Parse()
	if *merge && *only == "" {
		fmt.Fprintln(os.Stderr, "benchreport: -merge needs -only (a full run rewrites the whole file)")
		os.Exit(2)
	}
	if err := run(*out, *only, *count, *peers, *merge); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

// section is one group of figures, usually one issue's.
type section struct {
	Title     string
	Intro     string
	Pkg       string // go package to benchmark
	Bench     string // -bench regexp
	Benchtime string // -benchtime; "" for the default
	Count     int    // 0: the -count flag
	Units     []string
	Targets   []target
	Notes     string // after the targets: why a target is missed
	// Windows names the unit that counts the windows of a run whose
	// figures are medians over windows: a unit U with companions U-min and
	// U-max then shows the windows' spread in the table's last column
	// ("1 run × 3 windows (min – max)") instead of the runs' alone.
	Windows string
	// EnvPrefix: the settings of this run in variables with this prefix
	// (DROVER_CHURNBENCH_) are shown before the command line.
	EnvPrefix string
	// Versions, when set, says what else ran (a peer's version, the
	// runtime's) in a paragraph after the command line.
	Versions func() string
}

// target is a figure an issue asks for.
type target struct {
	Label string
	Bench string // benchmark name without the -N suffix
	Unit  string
	Op    string // ">=" or "<="
	Value float64
}

// met reports whether the measured value v meets the target.
func (t target) met(v float64) bool {
	return (t.Op == ">=" && v >= t.Value) || (t.Op == "<=" && v <= t.Value)
}

func sections() []section {
	return []section{
		{
			Title: "Queue layer (Redis)", Pkg: "./queue",
			Intro: "Enqueue, batch enqueue and reads after an offset against a private Redis 7 on loopback. `redis-µs/msg` is Redis's own CPU per message (INFO commandstats), `client-µs/msg` the Go client's.",
			Bench: "^Benchmark(Enqueue|EnqueueBatch|ReadAfter)$", Units: []string{"msgs/s", "client-µs/msg", "redis-µs/msg"},
			Targets: []target{
				{"Enqueue from one goroutine ≥ 40,000 msgs/s", "BenchmarkEnqueue/goroutines=1", "msgs/s", ">=", 40000},
				{"EnqueueBatch (batch 1000) ≥ 300,000 msgs/s", "BenchmarkEnqueueBatch/batch=1000", "msgs/s", ">=", 300000},
				{"ReadAfter at batch 1000 ≥ 700,000 msgs/s", "BenchmarkReadAfter/batch=1000", "msgs/s", ">=", 700000},
			},
			Notes: "Why the targets are missed here: Redis's own CPU per message (`redis-µs/msg`) bounds each path on one Redis core — about 4 µs per message in a batch enqueue caps it near 250,000 msgs/s, about 1.9 µs per message read caps ReadAfter near 500,000 — and a lone caller pays a full round trip per message (one EVALSHA: tens of µs of Redis and client CPU per call on this machine). Concurrent callers are coalesced into one pipeline (8 goroutines: 3×). The enqueue script does more than a bare ZADD (dedupe of caller ids, TIME, the position sequence, the wake-up PUBLISH); the ceiling below is bare pipelined ZADDs.",
		},
		{
			Title: "A key's message on Redis (queue layer, no workers)", Pkg: "./queue",
			Intro: "Issue 43. The Redis side of a per-key fleet's messages without the workers, on a private Redis: 4,096 queues routed to one member's batch channel (a subscriber drains it, so the wake-ups carry the messages); a round sends one message to each of 256 of them in one `EnqueueBatch` (the enqueue-spread script), then their outcome records as records-only requests (record-many, each with its bucket note, as an owner's committer sends them), and every 16 messages of a queue its trim (trim-many). `redis-µs/msg` is the server's CPU (`INFO cpu`) per message, `redis-cmds/msg` its commands (scripts' included). The fleet bench's figures add the workers' reads, gauges and backstop, and what two loaded cores do to Redis; this one is what a script change moves, judged in an alternated A/B (`tools/abtool`).",
			Bench: "^BenchmarkKeyMessages$", Benchtime: "2x", Count: 5,
			Units: []string{"redis-µs/msg", "redis-cmds/msg", "msgs/s", "client-µs/msg"},
			Notes: "Where this Redis time goes, from a `perf` profile of the server (docs/decisions.md, \"Issue 43: positions handed to Redis as text\"): Lua and its calls into Redis, the hash and key lookups of the commands (memory-bound: each touches a cold key, its expiry and a cold hash), the sockets; not the number of round trips.",
		},
		{
			Title: "Durable enqueue (master and replica)", Pkg: "./queue",
			Intro: "Issue 45. `Producer.Enqueue` on a private Redis master with one replica (both private servers on this machine, the replica linked through a loopback proxy as in the durable tests), with the durable mode off and on (`WAIT 1` after the script, 1 s bound), from 1 and 8 goroutines in one run. `µs/enqueue` is the mean time of one call. The replica is on loopback: on a network the mode costs a round trip to the nearest replica more.",
			Bench: "^BenchmarkDurableEnqueue$", Units: []string{"msgs/s", "µs/enqueue"},
			Notes: "What an acknowledged enqueue means in each mode, on standalone Redis, Sentinel and Cluster: docs/semantics.md.",
		},
		{
			Title: "Coordinator (ZooKeeper)", Pkg: "./coordinator",
			Intro: "Fenced commits (one multi: check owner + set offset), claim+release pairs, time from a cut connection to the session being reported lost, and the write pause when a 3-node ensemble's leader is killed.",
			Bench: "^Benchmark(Commit|ClaimRelease|LostReport|LeaderKillWritePause)$",
			Units: []string{"commits/s", "pairs/s", "s/lost-report", "fraction-of-timeout", "s/write-pause"},
			Targets: []target{
				{"lost reported before the session timeout (4 s)", "BenchmarkLostReport/session=4s", "fraction-of-timeout", "<=", 1},
				{"lost reported before the session timeout (10 s)", "BenchmarkLostReport/session=10s", "fraction-of-timeout", "<=", 1},
			},
		},
		{
			Title: "Rebalancing", Pkg: "./rebalance",
			Intro: "Assignment computation at 100 members × 10,000 queues (pure, in process): fresh, after one member joins, after one leaves; `moved` is the queues that change owner.",
			Bench: "^Benchmark(Sticky|Range|RoundRobin)100x10000", Benchtime: "20x", Units: []string{"ns/op", "moved"},
			Targets: []target{
				{"sticky computation < 50 ms at 100 × 10,000 (join)", "BenchmarkSticky100x10000/join", "ns/op", "<=", 50e6},
			},
		},
		{
			Title: "Rebalance protocol (real ZooKeeper)", Pkg: "./fleet",
			Intro: "10 members (separate sessions) × 1,000 queues: time from a membership change until every queue is run by the member the new assignment names; the crash is a cut connection with a 4 s session timeout. `zk-writes` counts claims, releases and the assignment write of the change.",
			Bench: "^BenchmarkConvergence10x1000$", Benchtime: "1x",
			Units: []string{"join-s", "leave-s", "crash-s", "join-moved", "join-zk-writes", "leave-moved", "leave-zk-writes"},
			Targets: []target{
				{"planned join converges < 1 s", "BenchmarkConvergence10x1000", "join-s", "<=", 1},
				{"planned leave converges < 1 s", "BenchmarkConvergence10x1000", "leave-s", "<=", 1},
				{"crash converges within session timeout + 2 s (6 s)", "BenchmarkConvergence10x1000", "crash-s", "<=", 6},
			},
		},
		{
			Title: "Worker runtime (real Redis, ZooKeeper and child processes)", Pkg: "./e2e",
			Intro: "In process: enqueue N, start the queue, and time until the fenced committed offset covers the last message (`tasks/s`, `ratio`: the targets' measure); `done-tasks/s` and `done-ratio` stop the clock earlier, when the worker's completed position covers the last message, and `commit-tail-ms` is the difference per run: the wait for the member's next coalesced commit. `/bin/true` runs through the subprocess executor at concurrency 4 and is compared, alternately in the same run, with a bare loop spawning `/bin/true` at the same concurrency. Latency is from Enqueue returning to the handler starting, on an idle queue woken by the enqueue notification. RSS is a `drover worker` process owning 1,000 idle queues. `RuntimeInline` records its metrics into nothing; `RuntimeInlineMetrics` is the same run with the sinks `drover worker` sets up (Prometheus and the in-memory dump).",
			Bench: "^Benchmark(RuntimeTrue|RuntimeGoChild|RuntimeInline|RuntimeInlineMetrics|EnqueueToStart|IdleQueuesRSS)$", Benchtime: "1x",
			Units: []string{"tasks/s", "done-tasks/s", "cpu-us/task", "bare-tasks/s", "ratio", "done-ratio", "commit-tail-ms", "p50-ms", "p99-ms", "rss-MB"},
			Targets: []target{
				{"/bin/true tasks/s ≥ 90% of the bare spawn loop", "BenchmarkRuntimeTrue", "ratio", ">=", 0.9},
				{"inline no-op ≥ 100,000 tasks/s", "BenchmarkRuntimeInline", "tasks/s", ">=", 100000},
				{"enqueue-to-start p50 < 5 ms", "BenchmarkEnqueueToStart", "p50-ms", "<=", 5},
				{"worker RSS with 1,000 idle queues < 60 MB", "BenchmarkIdleQueuesRSS", "rss-MB", "<=", 60},
			},
			Notes: "`cpu-us/task` is this process's CPU (user + system, `getrusage`) from Start until the committed offset covers the last message, per task: the worker's own cost, without Redis, ZooKeeper or the `/bin/true` children. It is the robust figure when the machine is shared: tasks/s falls with a busy neighbour much more than CPU per task rises. Why the inline figure fell from 132,831 (2026-11-24) to 74,749 (2026-11-27 02:24 UTC): not the code. Built from the commit that measured 132,831 (e317980), from the start of the 2026-11-27 session (e819dca) and from main, and run alternately on the same machine at a load of 2–6 (three rounds), the three gave the same figures within the noise: 58,704–66,403, 60,737–68,057 and 51,383–76,918 tasks/s, 10.5–13.5, 8.7–13.0 and 8.4–12.1 µs of CPU a task; the 2026-11-27 run was made on a busier machine. The RSS is measured with the default settings (the Prometheus sink on). An idle queue is parked: no goroutine, no timer, no poll; what it still holds is its loop state, its claim and config, and its backlog gauges for 2 minutes after it parks. The Fleet runtime section measures 25,000 queues per worker. Why the ratio and inline targets moved (issue 14): until the per-member committer, a queue that drained committed at once; now its last offset waits for the member's next commit, one coalesced multi per CommitInterval (200 ms, timed from one flush's start to the next, so up to 200 ms). That tail (`commit-tail-ms`) was a fixed cost per run, 0–200 ms on a /bin/true run of about 1.2 s and about 200 ms on an inline run of about 1 s (the per-task path itself is measured by `done-ratio` and `done-tasks/s`). Now the committer also flushes at once when the whole member drains (no queue has work) after a quarter interval of work, early flushes an interval apart, so at most two flushes start per interval (10/s at 200 ms) and the busy-runtime target (≤ 25 ZooKeeper writes/s per member) holds while a run's last offset is committed within a flush of its last task; see docs/decisions.md, \"Commit tail and batched commits (issue 14, commit path)\".",
		},
		{
			Title: "Process pool (executor alone)", Pkg: "./worker/executor",
			Intro: "Issue 17: pooled task processes against a process per task, on the executor alone (no queue, no Redis) at concurrency 4, each pair measured in turns within one run. `GoNoop`: a no-op Go handler in a re-executed child per task, in pooled children (max_tasks_per_child 1000) and inline. `PythonNoop`: one Python program (`python3 noop.py`) started per message against the same program serving tasks through `python/drover_pool.py` (max_tasks_per_child 1000). `ManyQueuesShareOnePool` (issue 40): 200 queues sharing one pooled route's pool against one queue, in turns, 4 slots: a pool serves keys, not queues (docs/process-pool.md). `MaxTasksOneVsSpawn`: pooled Go children that serve one task each (every task needs a new child, started ahead in the background) against a bare os/exec loop spawning the same binary in its per-task Go child mode. The comparison with asynq's in-process handler is end to end, in the peers section below.",
			Bench: "^BenchmarkPool(GoNoop|PythonNoop|MaxTasksOneVsSpawn|ManyQueuesShareOnePool)$", Benchtime: "1x",
			Units: []string{"pertask-tasks/s", "pooled-tasks/s", "inline-tasks/s", "pooled/pertask", "bare-tasks/s", "pooled/bare", "200queues-tasks/s", "1queue-tasks/s", "200queues/1queue", "children-max"},
			Targets: []target{
				{"pooled Go no-op ≥ 25,000 tasks/s", "BenchmarkPoolGoNoop", "pooled-tasks/s", ">=", 25000},
				{"pooled Python no-op ≥ 5,000 tasks/s", "BenchmarkPoolPythonNoop", "pooled-tasks/s", ">=", 5000},
				{"pooled Python ≥ 30 × Python per task", "BenchmarkPoolPythonNoop", "pooled/pertask", ">=", 30},
				{"pooled with max_tasks_per_child = 1 ≥ 0.9 × a bare spawn loop of the same program", "BenchmarkPoolMaxTasksOneVsSpawn", "pooled/bare", ">=", 0.9},
				{"200 queues on one pooled route keep at most the worker's 4 slots of children", "BenchmarkPoolManyQueuesShareOnePool", "children-max", "<=", 4},
			},
			Notes: "What bounds pooled Go: a pooled no-op task costs about 25 µs of CPU on this machine (measured with getrusage over 120,000 tasks at concurrency 4: about 9 µs in the worker — the frame, one write and one read, the output check, the hand-off — and 16 µs in the child and the kernel, mostly the two process wake-ups per task; docs/decisions.md, \"Pooled Go children end to end\"), so two idle cores top out near 80,000 tasks/s; children recycled every 1,000 tasks add a process start each (a few ms of CPU). Other work on the machine takes its share of both cores: a run under load lands below 25,000 even when a quiet one does not. Python per task is an interpreter start per message (with `site`), which the machine's load stretches most.",
		},
		{
			Title: "Task lease (subprocess executor)", Pkg: "./worker/executor",
			Intro: "`/bin/true` through the subprocess executor with the task lease (its supervisor process running, renewed every 100 ms, bound 10 s / 3), through the executor without a lease, and spawned bare by `os/exec`, at concurrency 4, in alternating rounds of 20 tasks (rotating order) so that all three see the same machine load. The lease costs the task path two 16-byte pipe writes per task; the supervisor reads them on its own tick.",
			Bench: "^BenchmarkLeaseTrue$", Benchtime: "9000x",
			Units: []string{"lease-tasks/s", "nolease-tasks/s", "bare-tasks/s", "lease/nolease", "lease/bare"},
			Targets: []target{
				{"/bin/true with the lease ≥ 0.97 × without", "BenchmarkLeaseTrue", "lease/nolease", ">=", 0.97},
				{"/bin/true with the lease ≥ 90% of the bare spawn loop", "BenchmarkLeaseTrue", "lease/bare", ">=", 0.9},
			},
			Notes: "lease/bare can only be as good as the executor's own ratio to the bare loop (nolease-tasks/s against bare-tasks/s here, and the Worker runtime section); on a loaded machine both spread widely, while lease/nolease, measured round by round, stays near 1.",
		},
		{
			Title: "Outcome records (job status)", Pkg: "./e2e",
			Intro: "Inline no-op tasks (25,000 per run, concurrency 16) with outcome records off and on (the default: 24 h, 10,000 per queue), in 7 back-to-back pairs per benchmark run (which goes first alternates) on the same worker, Redis and ZooKeeper. Records of succeeded tasks go in the trim-many call after each commit (one HSET field per record in an expiring bucket; the log itself is trimmed with them every 5 s while a queue keeps committing, and once the member is idle); `cost` = 1 − on/off.",
			Bench: "^BenchmarkOutcomeRecordsInline$", Benchtime: "1x",
			Units: []string{"off-tasks/s", "on-tasks/s", "cost"},
			Targets: []target{
				{"outcome records on cost ≤ 10% of inline no-op tasks/s", "BenchmarkOutcomeRecordsInline", "cost", "<=", 0.10},
			},
			Notes: "A record is one HSET field and about 110 bytes sent per succeeded task, in the committer's trim-many call that follows each commit (the queue loop does not wait for it). What a record costs Redis is in the next section (about 3 commands in the common case since the fixed-expiry buckets; 8 before). Against a whole inline no-op task (10–16 µs of CPU here) the records are at the edge of the 10% target on this machine: development runs of the older per-queue trim pipeline at a load average near 11 gave 14–15%; writing the records from a separate goroutine instead measured worse (21–25%), since both compete for the same 2 cores. Against a subprocess task (about 1 ms) a record is well under 1%. Why the cost rose from 2% to about 16% in the stop of 2026-11-24 (issue 14) with no change to the records: the drain flush took the commit tail (up to 200 ms) out of both runs, so a 50,000-task run got about 30% shorter and the records' absolute cost (about 1 µs per task: 0.94 µs by the earlier figures, 1.27 µs by these) became a larger share of it; the tail had been diluting the difference. Since the outcomecost change (docs/decisions.md, \"Outcome records: what they cost per task\") a record costs no allocation of its own in the task's path nor per argument, and a queue's records go in script calls of at most 1,000, so that the queue loops' reads are not held for a whole flush's records (6–8 ms for 7,500); and records that fill whole buckets are written with plain HSETs (0.12–0.18 µs a record in Redis, against 0.6–1.0 µs as script arguments) to staging keys that trim-many adopts as buckets by RENAME. Development A/B runs gave 0.09–0.12 at load about 1 against main's 0.16–0.19. About half of what is left is building the records in the task's path.",
		},
		{
			Title: "Outcome record cost (Redis commands per record)", Pkg: "./queue",
			Intro: "One outcome record per queue per commit, the busy runtime's case (each busy queue finishes about one job per second), written by the committer's `trim-many` call for 64 queues at a time and by `record-outcomes` alone (a revoke; it adds the call's `TIME`). Commands are counted with `INFO commandstats` (commands the scripts run; the script calls not counted; for `trim-many` the same trims without records are subtracted). `buckets=1`: the default bound, the records in one bucket; `buckets=8`: bound 80 (10 per bucket), eight buckets held and a new one every 10 records, so that rotation and the bound's enforcement are included.",
			Bench: "^BenchmarkRecordOneCommands$", Benchtime: "200x",
			Units: []string{"trim-many-cmds/record", "record-outcomes-cmds/record"},
			Targets: []target{
				{"a record in the common case costs about 3 commands (ZRANGE, HLEN, HSET)", "BenchmarkRecordOneCommands/buckets=1", "trim-many-cmds/record", "<=", 3},
			},
			Notes: "Before the fixed bucket expiry (trim-many v1) the same runs gave 8 (buckets=1) and 15.3 (buckets=8) commands per record: every call dropped expired index entries, re-expired the bucket and re-scored it, and read the size of every bucket to enforce the bound, so the cost grew with the buckets held (up to about 9 at the default retention). Now that bookkeeping happens only when a bucket is made, once per 1/8 of the bound or of the retention (docs/decisions.md, \"Outcome buckets with a fixed expiry\").",
		},
		{
			Title: "HTTP producers", Pkg: "./web",
			Intro: "`POST /api/v1/queues/{q}/jobs` with batches of 100 jobs from one keep-alive client with a producer token (authenticated, size-bounded, audited), against the Go client's `EnqueueBatch` of 100 on the same Redis, alternating in the same run; `ratio` = HTTP / Go client.",
			Bench: "^BenchmarkHTTPEnqueueBatch100$", Benchtime: "1x",
			Units: []string{"http-jobs/s", "client-jobs/s", "ratio"},
			Notes: "No target was set. Where an HTTP request's time goes (CPU profile): the console decodes every mutation's body generically for its form/JSON parameters and the audit detail, the job endpoint decodes it again strictly, and the answer is indented JSON; the enqueue itself is the same script call as EnqueueBatch.",
		},
		{
			Title: "Web console at 10,000 queues", Pkg: "./web",
			Intro: "One refresh of the queues page and of `GET /api/v1/queues?sort=lag&order=desc&per_page=100` over 10,000 configured queues with one message each, through the real handler (token auth, sorting, rendering), each reading the whole fleet afresh (snapshot cache off): one listing of `/queues` and `/owners`, one `/offsets/<queue>` read per queue pipelined 128 in flight on the session's connection, and the Redis backlog as plain commands (ZCOUNT, ZRANGE LIMIT 1, ZCARD) pipelined 1,000 queues per round trip — no per-queue Lua script. `redis-round-trips/refresh` is counted by a go-redis hook; `SnapshotParts10k` times the two per-queue parts alone (the ZooKeeper offset reads, the Redis backlog pipelines).",
			Bench: "^BenchmarkConsole(Queues10k|SnapshotParts10k)$", Benchtime: "3x", Count: 3,
			Units: []string{"ms/refresh", "redis-round-trips/refresh", "zk-ms", "redis-ms"},
			Targets: []target{
				{"/api/v1/queues: Redis round trips per refresh ≤ 50", "BenchmarkConsoleQueues10k/api", "redis-round-trips/refresh", "<=", 50},
				{"/api/v1/queues: server time < 1 s", "BenchmarkConsoleQueues10k/api", "ms/refresh", "<=", 1000},
				{"queues page: Redis round trips per refresh ≤ 50", "BenchmarkConsoleQueues10k/page", "redis-round-trips/refresh", "<=", 50},
				{"queues page: server time < 1 s", "BenchmarkConsoleQueues10k/page", "ms/refresh", "<=", 1000},
			},
			Notes: "Most of a refresh is the 10,000 ZooKeeper offset reads (the only per-queue cost left in ZooKeeper; `zk-ms`) and the client's work on 50,000 pipelined Redis replies (`redis-ms`), both CPU-bound on this machine; the console serves every page and API call from one snapshot for 2 s (web.Config.SnapshotTTL), so concurrent viewers share one refresh. A miss of the time target on this 2-core machine comes with the load average of the other work on it: the page and the API do the same reads.",
		},
		{
			Title: "Autoscaling (KEDA external scaler)", Pkg: "./scaler",
			Intro: "Time from an Enqueue call to the StreamIsActive push of \"active\" for an idle selection, received over gRPC as KEDA receives it (real Redis; 40 enqueues to fresh queues per run). `poll-only` has no enqueue wake-ups: the push comes from the 1 s poll, the backstop for a lost wake-up.",
			Bench: "^BenchmarkStreamPush$", Benchtime: "1x", Count: 3,
			Units: []string{"p50-ms", "p99-ms", "max-ms"},
			Targets: []target{
				{"push within 2 s of an enqueue to an idle selection", "BenchmarkStreamPush/wakeup", "max-ms", "<=", 2000},
				{"push within 2 s even when the wake-up is lost", "BenchmarkStreamPush/poll-only", "max-ms", "<=", 2000},
			},
		},
		{
			Title: "Autoscaling at 100,000 queues", Pkg: "./cmd/drover",
			Intro: "One poll of the scaler (`scaler.Measure`, what `drover scaler` runs for each selection every second and for KEDA's GetMetrics) over a prefix selection of 100,000 registered queues, 1,000 of them with a message, on real ZooKeeper and Redis, through the scaler's own fleet: the registry's names (one listing per bucket, no configuration read), one pipelined `EXISTS` per queue in batches of 1,000, and only for the queues whose log holds a message their committed offsets (pipelined ZooKeeper reads) and backlogs (one Redis pipeline). Before this, a poll read every queue's configuration and offset from ZooKeeper: 7.1 s for 10,000 queues in development at a load of about 15.",
			Bench: "^BenchmarkScalerMeasure100k$", Benchtime: "1x", Count: 3,
			Units: []string{"poll-s", "queues"},
			Targets: []target{
				{"one poll over 100,000 queues ≤ 1 s (so that the 2 s push bound of the section above holds at that size)", "BenchmarkScalerMeasure100k", "poll-s", "<=", 1},
			},
		},
		{
			Title: "Tracing (OpenTelemetry)", Pkg: "./tracing",
			Intro: "The same tasks with tracing off and on (100% sampling, the SDK's batching processor, an exporter that drops), alternating in rounds within each run on a real Redis, worker and executor: an inline no-op at concurrency 16 (20,000 tasks) and `/bin/true` at 4 (1,000). `on-cost-%` is the throughput lost with tracing on; `cpu-µs/task` is the process's CPU (with its children's) per task and `on-cpu-cost-%` its rise with tracing on: figures a busy neighbour on the machine inflates far less than throughput, which on a shared machine can even come out negative. `off-cost-%` is what the hooks cost with tracing off (a nil Tracer: every hook of the enqueue, the worker and the executor, timed over a million tasks) as a share of an inline task's time.",
			Bench: "^BenchmarkTracingThroughput$", Benchtime: "1x",
			Units: []string{"off-tasks/s", "on-tasks/s", "on-cost-%", "off-cpu-µs/task", "on-cpu-µs/task", "on-cpu-cost-%", "off-cost-%"},
			Targets: []target{
				{"tracing off costs nothing measurable (hooks ≤ 0.5% of an inline task)", "BenchmarkTracingThroughput/inline", "off-cost-%", "<=", 0.5},
				{"tracing on, /bin/true: throughput cost ≤ 5%", "BenchmarkTracingThroughput/true", "on-cost-%", "<=", 5},
				{"tracing on, /bin/true: CPU cost ≤ 5%", "BenchmarkTracingThroughput/true", "on-cpu-cost-%", "<=", 5},
				{"tracing on, inline no-op: throughput cost ≤ 5%", "BenchmarkTracingThroughput/inline", "on-cost-%", "<=", 5},
			},
			Notes: "Why the inline target can be missed: an inline no-op task costs the worker 10–15 µs of CPU in all (read, decode, dispatch, commit), and one recorded OpenTelemetry SDK span (start from the extracted parent, attributes, end into the batching processor) costs a few µs and about 3 KB of allocation on this machine, plus decoding the `traceparent` header. At 100% sampling that is a double-digit share of a task that does nothing; any task doing real work (`/bin/true`: about 1 ms of CPU with its process start) hides it. Sampling (`tracing.sample_ratio`) cuts it in proportion, since an unsampled trace records no span.",
		},
		{
			Title: "Scheduler", Pkg: "./queue",
			Intro: "The schedule store on Redis: start-up with 100,000 entries (100 due), sustained fires, and lateness at 1,000 fires/s on the real clock.",
			Bench: "^BenchmarkSchedule(Startup100k|Fires|Lateness1000)$", Benchtime: "1x",
			Units: []string{"ms/first-tick", "heap-B/first-tick", "redis-B/entry", "fires/s", "p50-ms", "p99-ms"},
			Targets: []target{
				{"start-up with 100,000 entries < 1 s", "BenchmarkScheduleStartup100k", "ms/first-tick", "<=", 1000},
				{"lateness p99 < 100 ms at 1,000 fires/s", "BenchmarkScheduleLateness1000", "p99-ms", "<=", 100},
			},
		},
		metricsBudget,
		consoleManyQueues, // console_many.go
		rateLimits,        // ratelimit.go
		fairness,          // fairness.go
		queueFamilies,     // families.go
		keyChurn,          // churn.go
		pythonClient,
		nodeVsBullMQ, // bullmq.go
	}
}

// result holds every run's value per benchmark and unit.
type result map[string]map[string][]float64

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

func runGoBench(s section, count int) (result, string, error) {
	if s.Count > 0 {
		count = s.Count
	}
	args := []string{"test", "-run", "^$", "-bench", s.Bench, "-count", strconv.Itoa(count), "-timeout", "30m"}
	if s.Benchtime != "" {
		args = append(args, "-benchtime", s.Benchtime)
	}
	args = append(args, s.Pkg)
	cmdline := "go " + strings.Join(quoteAll(args), " ")
	fmt.Fprintf(os.Stderr, "benchreport: %s\n", cmdline)
	cmd := exec.Command("go", args...)
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		// The report says why too, but someone watching the run should
		// not have to open it to learn that a section failed.
		fmt.Fprintf(os.Stderr, "benchreport: FAILED after %s (%v):\n%s", time.Since(start).Round(time.Second), err, buf.String())
		return nil, cmdline, fmt.Errorf("%s: %w\n%s", cmdline, err, buf.String())
	}
	fmt.Fprintf(os.Stderr, "benchreport: done in %s\n", time.Since(start).Round(time.Second))
	res := result{}
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		fields := strings.Fields(m[3])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			if res[m[1]] == nil {
				res[m[1]] = map[string][]float64{}
			}
			res[m[1]][fields[i+1]] = append(res[m[1]][fields[i+1]], v)
		}
	}
	return res, cmdline, nil
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$|()* ") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}

func median(vs []float64) float64 {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func format(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func render(b *strings.Builder, s section, res result, cmdline string) {
	fmt.Fprintf(b, "## %s\n\n%s\n\n`%s`\n\n", s.Title, s.Intro, cmdline)
	if s.Versions != nil {
		fmt.Fprintf(b, "%s\n\n", s.Versions())
	}
	names := make([]string, 0, len(res))
	for n := range res {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(b, "| benchmark | metric | median | runs (min – max) |\n|---|---|---:|---|\n")
	for _, n := range names {
		for _, u := range s.Units {
			vs := res[n][u]
			if len(vs) == 0 {
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", strings.TrimPrefix(n, "Benchmark"), u, format(median(vs)), spread(s, res[n], u))
		}
	}
	if len(s.Targets) > 0 {
		fmt.Fprintf(b, "\n| target | measured (median) | verdict |\n|---|---:|---|\n")
		for _, t := range s.Targets {
			vs := res[t.Bench][t.Unit]
			if len(vs) == 0 {
				fmt.Fprintf(b, "| %s | — | NOT MEASURED |\n", t.Label)
				continue
			}
			v := median(vs)
			verdict := "met"
			if !t.met(v) {
				verdict = "**MISSED**"
			}
			fmt.Fprintf(b, "| %s | %s %s | %s |\n", t.Label, format(v), t.Unit, verdict)
		}
	}
	if s.Notes != "" {
		fmt.Fprintf(b, "\n%s\n", s.Notes)
	}
	b.WriteString("\n")
}

// spread is the table's last column for unit u of one benchmark: how many
// runs, and the smallest and largest value. For a figure that is a median
// over windows (the section's Windows unit and u's -min and -max
// companions are there) the range is over every window of every run.
func spread(s section, fig map[string][]float64, u string) string {
	vs := fig[u]
	lo, hi := slices.Min(vs), slices.Max(vs)
	runs := fmt.Sprintf("%d", len(vs))
	mins, maxs, windows := fig[u+"-min"], fig[u+"-max"], fig[s.Windows]
	if s.Windows != "" && len(mins) > 0 && len(maxs) > 0 && len(windows) > 0 {
		lo, hi = min(lo, slices.Min(mins)), max(hi, slices.Max(maxs))
		runs = fmt.Sprintf("%d run × %d windows", len(vs), int(median(windows)))
		if len(vs) > 1 {
			runs = fmt.Sprintf("%d runs × %d windows", len(vs), int(median(windows)))
		}
	}
	return fmt.Sprintf("%s (%s – %s)", runs, format(lo), format(hi))
}

// redisCeiling runs redis-benchmark ZADD with -P 64 against a private Redis,
// count times, and returns the median requests/s.
func redisCeiling(count int) (float64, string, error) {
	dir, err := os.MkdirTemp("", "drover-benchreport-")
	if err != nil {
		return 0, "", err
	}
	defer os.RemoveAll(dir)
	r, err := localserver.StartRedis(dir, localserver.RedisOptions{})
	if err != nil {
		return 0, "", err
	}
	defer r.Kill()
	port := r.Addr[strings.LastIndexByte(r.Addr, ':')+1:]
	args := []string{"-p", port, "-t", "zadd", "-n", "1000000", "-P", "64", "-q"}
	cmdline := "redis-benchmark " + strings.Join(args, " ")
	var vs []float64
	for i := 0; i < count; i++ {
		out, err := exec.Command("redis-benchmark", args...).CombinedOutput()
		if err != nil {
			return 0, cmdline, fmt.Errorf("%s: %w: %s", cmdline, err, out)
		}
		m := regexp.MustCompile(`ZADD: ([0-9.]+) requests per second`).FindSubmatch(out)
		if m == nil {
			return 0, cmdline, fmt.Errorf("%s: no figure in %q", cmdline, out)
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		vs = append(vs, v)
	}
	return median(vs), cmdline, nil
}

func machine() string {
	var b strings.Builder
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
				mem = fmt.Sprintf("%.0f GiB", float64(kb)/1024/1024)
			}
		}
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	redisV, _ := exec.Command("redis-server", "--version").Output()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&b, "* Machine: %d cores (%s), %s memory, Linux %s\n", runtime.NumCPU(), model, mem, strings.TrimSpace(string(kernel)))
	fmt.Fprintf(&b, "* %s; Redis %s; ZooKeeper 3.8 (Debian)\n", runtime.Version(), strings.TrimPrefix(strings.Fields(string(redisV) + " ? ? ?")[2], "v="))
	fmt.Fprintf(&b, "* Load average when the run started: %s\n", strings.Join(strings.Fields(string(load))[:3], " "))
	return b.String()
}

func run(out, only string, count int, peers, merge bool) error {
	start := time.Now()
	var b strings.Builder
	b.WriteString("# Benchmarks\n\nWritten by `make bench` (`go run ./tools/benchreport`); do not edit by hand.\n\n")
	fmt.Fprintf(&b, "* Date: %s\n%s", start.UTC().Format("2006-01-02 15:04 MST"), machine())
	fmt.Fprintf(&b, "* Every figure is the median of %d runs unless a section says otherwise; ratios are measured in the same run. The machine has 2 cores and other work may run on it: read the min–max spread before trusting a small difference.\n\n", count)
	var body strings.Builder
	for _, s := range sections() {
		if only != "" && !strings.Contains(s.Title, only) {
			continue
		}
		res, cmdline, err := runGoBench(s, count)
		if err != nil {
			return err
		}
		if env := envWithPrefix(s.EnvPrefix); s.EnvPrefix != "" && env != "" {
			cmdline = env + " " + cmdline
		}
		render(&body, s, res, cmdline)
		if s.Pkg == "./queue" && strings.Contains(s.Title, "Queue") {
			v, cmdline, err := redisCeiling(count)
			if err != nil {
				fmt.Fprintf(&body, "Ceiling: `redis-benchmark` failed: %v\n\n", err)
			} else {
				fmt.Fprintf(&body, "Ceiling, same machine and run: `%s` → **%s ZADD/s** (median of %d). It pipelines 64 bare ZADDs per round trip with no envelope, so it bounds what any enqueue path can do here.\n\n", cmdline, format(v), count)
			}
		}
	}
	for _, s := range []section{fleetRuntime, fleetRuntimeSparse} {
		if only == "" || strings.Contains(s.Title, only) {
			body.WriteString(fleetRuntimeSection(s, count))
		}
	}
	if only == "" || strings.Contains("Scheduler failover", only) {
		body.WriteString(failoverSection())
	}
	if peers && (only == "" || strings.Contains("peers", only)) {
		section, err := peerSection(count)
		if err != nil {
			fmt.Fprintf(&body, "## Against peers, and scale\n\nThe bench module failed: %v\n\n", err)
		} else {
			body.WriteString(section)
		}
	}
	if merge {
		old, err := os.ReadFile(out)
		if err != nil {
			return fmt.Errorf("-merge: %w", err)
		}
		stamp := fmt.Sprintf("*This section was run again on its own (`go run ./tools/benchreport -only %q -merge`) on %s; the machine and load of that run:*\n\n%s\n", only, start.UTC().Format("2006-01-02 15:04 MST"), machine())
		merged, err := mergeSections(string(old), body.String(), stamp)
		if err != nil {
			return err
		}
		return os.WriteFile(out, []byte(merged), 0o644)
	}
	b.WriteString(body.String())
	fmt.Fprintf(&b, "---\n\nThe whole run took %s.\n", time.Since(start).Round(time.Second))
	return os.WriteFile(out, []byte(b.String()), 0o644)
}

// mergeSections replaces, in report, every "## " section that fresh has
// (matched by its heading line) with fresh's, whose first paragraph after
// the heading becomes stamp followed by the section's own text; sections
// fresh does not have are kept as they were. A fresh section the report
// lacks is added before the closing "---" line.
func mergeSections(report, fresh, stamp string) (string, error) {
	split := func(s string) (head string, secs []string) {
		parts := strings.Split(s, "\n## ")
		head = parts[0]
		for _, p := range parts[1:] {
			secs = append(secs, "## "+p)
		}
		return head, secs
	}
	title := func(sec string) string { return strings.SplitN(sec, "\n", 2)[0] }
	_, news := split("\n" + fresh)
	if len(news) == 0 {
		return "", fmt.Errorf("-merge: the run produced no section")
	}
	byTitle := map[string]string{}
	for _, n := range news {
		t, rest, _ := strings.Cut(n, "\n")
		byTitle[t] = t + "\n\n" + stamp + rest
	}
	head, olds := split(report)
	var b strings.Builder
	b.WriteString(head)
	for i, o := range olds {
		t := title(o)
		tail := ""
		if i == len(olds)-1 {
			// The last section carries the report's closing lines.
			if k := strings.Index(o, "\n---\n"); k >= 0 {
				o, tail = o[:k+1], o[k+1:]
			}
		}
		b.WriteString("\n")
		if n, ok := byTitle[t]; ok {
			b.WriteString(strings.TrimRight(n, "\n") + "\n")
			delete(byTitle, t)
		} else {
			b.WriteString(o)
		}
		if tail != "" {
			for _, n := range news {
				if s, ok := byTitle[title(n)]; ok {
					b.WriteString("\n" + strings.TrimRight(s, "\n") + "\n")
				}
			}
			byTitle = nil
			b.WriteString("\n" + tail)
		}
	}
	return b.String(), nil
}

// failoverSection runs the scheduler failover test once and reports how late
// the latest fire was: 3 candidates, 200 entries every second for 60 s, the
// leader killed with SIGKILL and later cut off ZooKeeper (4 s sessions).
func failoverSection() string {
	args := []string{"test", "-count", "1", "-run", "^TestSchedulerFailoverFiresEverySlotOnce$", "-v", "./e2e"}
	cmdline := "go " + strings.Join(quoteAll(args), " ")
	fmt.Fprintf(os.Stderr, "benchreport: %s\n", cmdline)
	out, err := exec.Command("go", args...).CombinedOutput()
	var b strings.Builder
	b.WriteString("## Scheduler failover\n\nThree `drover scheduler` processes, 200 entries firing every second for 60 s; the leader is killed with SIGKILL, later the next one is cut off ZooKeeper (session timeout 4 s). Every (entry, slot) fires exactly once (the test asserts it); lateness is the latest enqueue after its slot, which falls at a failover. One run.\n\n")
	fmt.Fprintf(&b, "`%s`\n\n", cmdline)
	m := regexp.MustCompile(`latest fire ([0-9.]+m?s) after its slot \(session timeout ([0-9.]+s)\)`).FindSubmatch(out)
	if err != nil || m == nil {
		fmt.Fprintf(&b, "The run failed: %v\n\n", err)
		return b.String()
	}
	late, _ := time.ParseDuration(string(m[1]))
	timeout, _ := time.ParseDuration(string(m[2]))
	verdict := "met"
	if late > timeout+time.Second {
		verdict = "**MISSED**"
	}
	fmt.Fprintf(&b, "| target | measured | verdict |\n|---|---:|---|\n| first fire after a failover late by at most session timeout + 1 s (%s) | %s | %s |\n\n", timeout+time.Second, late, verdict)
	return b.String()
}

// peerSection runs the bench/ module, which writes its own markdown.
func peerSection(count int) (string, error) {
	md := filepath.Join(os.TempDir(), "drover-bench-peers.md")
	cmd := exec.Command("go", "run", ".", "-md", md, "-runs", strconv.Itoa(count))
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod") // the bench module follows the root module's requirements
	cmd.Dir = "bench"
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	fmt.Fprintf(os.Stderr, "benchreport: (cd bench && go run . -md %s -runs %d)\n", md, count)
	os.Remove(md) // never report an earlier run's figures
	runErr := cmd.Run()
	data, err := os.ReadFile(md)
	if err != nil {
		if runErr != nil {
			return "", fmt.Errorf("cd bench && go run .: %w", runErr)
		}
		return "", err
	}
	if runErr != nil {
		// The module exits 1 when a section failed (a scale size that does
		// not converge, say) but still writes every figure it has and names
		// the failure: report them, with the exit, rather than nothing.
		return fmt.Sprintf("The bench module exited with %v; its report, which names what failed, follows.\n\n", runErr) + string(data) + "\n", nil
	}
	return string(data) + "\n", nil
}
