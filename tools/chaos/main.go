// Command chaos is Drover's fault-injection run: a 3-node ZooKeeper
// ensemble, Redis with appendonly, a fleet of `drover worker` processes and
// `drover scheduler` candidates on this machine, a steady load and
// schedules firing every second, while faults are injected (kill -9 and
// SIGSTOP of workers, cut ZooKeeper links, kill -9 and SIGSTOP of the
// ZooKeeper leader, a Redis restart, a rolling restart of every worker, a
// killed scheduler leader). After a drain phase the checker
// (tools/chaos/check) verifies from the task log, Redis and ZooKeeper
// that nothing was lost, nothing overlapped that must not, and duplicates
// happened only for messages in flight at a fault. It prints the result as
// Markdown and exits 1 when an invariant was violated.
//
//	go run ./tools/chaos -duration 10m    (make chaos)
//	go run ./tools/chaos -check DIR       (check a kept run directory again)
//
// The task program is tools/chaos/task, built into the run directory.
// docs/reliability.md describes the run and holds the table of a full run.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/drover-dev/drover/tools/chaos/check"
)

func main() { os.Exit(realMain(os.Args[1:])) }

// realMain runs the command and returns the exit code: 0 when every
// invariant held, 1 when one was violated, 2 when the run itself failed.
func realMain(args []string) int {
	o, err := parseOptions(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var res *result
	if o.CheckDir != "" {
		res, err = recheck(o.CheckDir)
	} else {
		res, err = run(ctx, o, os.Stderr)
	}
	if res == nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	res.Report.Markdown(os.Stdout, res.Run)
	if o.JSON != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(o.JSON, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "chaos: write report:", err)
			return 2
		}
	}
	if err != nil { // the run was cut short: the report covers what happened
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	if !res.Report.OK() {
		return 1
	}
	return 0
}

// result is what a run produced; -json writes it.
type result struct {
	Run    check.Run     `json:"run"`
	Report *check.Report `json:"report"`
	Dir    string        `json:"dir"`
}

// options are the command's flags.
type options struct {
	Duration       time.Duration
	Rate           int
	Queues         int
	Ordered        int
	LongQueues     int
	Schedules      int
	Workers        int
	Schedulers     int
	SessionTimeout time.Duration
	TaskSleep      time.Duration
	FaultGap       time.Duration
	RedisCutLength time.Duration // 0: two to three session timeouts
	CommitWindow   time.Duration
	DrainBound     time.Duration // the drain gives up when the backlog has not shrunk for this long
	DrainMax       time.Duration // … or after this long in all
	MaxLag         int
	Seed           int64
	Drover         string
	Task           string
	Dir            string
	Keep           bool
	JSON           string
	CheckDir       string
	Kinds          []check.Kind
	Durable        bool
	Producers      []string // producerGo, and which of producerNode and producerPython feed some queues (foreign.go)
	args           []string
}

func parseOptions(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.DurationVar(&o.Duration, "duration", 10*time.Minute, "length of the load and fault phase (setup and drain come on top)")
	fs.IntVar(&o.Rate, "rate", 300, "messages enqueued per second")
	fs.IntVar(&o.Queues, "queues", 50, "queues the load spreads over")
	fs.IntVar(&o.Ordered, "ordered", 10, "how many of the queues are ordered")
	fs.IntVar(&o.LongQueues, "long-queues", 4, "extra ordered queues fed tasks longer than the session timeout (up to twice it), one pending message at a time; worker-freeze and host-freeze stop their owners")
	fs.IntVar(&o.Schedules, "schedules", 100, "schedule entries firing every second (catch-up all)")
	fs.IntVar(&o.Workers, "workers", 4, "worker processes")
	fs.IntVar(&o.Schedulers, "schedulers", 2, "scheduler candidates")
	fs.DurationVar(&o.SessionTimeout, "session-timeout", 4*time.Second, "the workers' ZooKeeper session timeout")
	fs.DurationVar(&o.TaskSleep, "task-sleep", 30*time.Millisecond, "a task sleeps a random time up to this")
	fs.DurationVar(&o.RedisCutLength, "redis-cut-length", 0, "length of a redis-cut and a redis-cut-all (0: two to three session timeouts)")
	fs.DurationVar(&o.FaultGap, "fault-gap", 3*time.Second, "longest pause between two faults (the shortest is a quarter of it)")
	fs.DurationVar(&o.CommitWindow, "commit-window", 2*time.Second, "a task finished this long before a fault must have been committed (the checker's bound)")
	fs.DurationVar(&o.DrainBound, "drain", 5*time.Minute, "after the faults stop, how long the backlog may go without shrinking before the drain gives up (drain-incomplete)")
	fs.DurationVar(&o.DrainMax, "drain-max", 30*time.Minute, "the longest drain, shrinking or not")
	fs.IntVar(&o.MaxLag, "max-lag", 200, "hold the load back while some queue has more than this many messages not yet run (0: never)")
	fs.Int64Var(&o.Seed, "seed", 0, "random seed of the fault schedule and the load (0: from the clock)")
	fs.StringVar(&o.Drover, "drover", "", "the drover binary (default: go build ./cmd/drover into the run directory)")
	fs.StringVar(&o.Task, "task", "", "the task program (default: go build ./tools/chaos/task into the run directory)")
	fs.StringVar(&o.Dir, "dir", "", "run directory, kept (default: a temporary one, removed when the run passes unless -keep)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the temporary run directory even when the run passes")
	fs.StringVar(&o.JSON, "json", "", "also write the report as JSON to this file")
	fs.StringVar(&o.CheckDir, "check", "", "do not run: check the kept run directory again")
	fs.BoolVar(&o.Durable, "durable", true, "with the sentinel kind: the producers and workers use the durable enqueue mode (1 replica, 500ms; -durable=false measures what a failover loses without it)")
	producers := fs.String("producers", "go,node,python", "the clients that enqueue the load: go, and node and python for a third of the queues each (their clients run as children; go alone: -producers go)")
	kinds := fs.String("faults", "", "comma-separated fault kinds to inject (default: all of them)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.args = args
	o.Kinds = check.Kinds
	if *kinds != "" {
		o.Kinds = nil
		for _, k := range strings.Split(*kinds, ",") {
			k = strings.TrimSpace(k)
			if _, ok := check.Effects[check.Kind(k)]; !ok || slices.Contains(check.Observed, check.Kind(k)) {
				return o, fmt.Errorf("-faults: unknown fault kind %q (want some of %v)", k, check.Kinds)
			}
			o.Kinds = append(o.Kinds, check.Kind(k))
		}
	}
	for _, p := range strings.Split(*producers, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains([]string{producerGo, producerNode, producerPython}, p) || slices.Contains(o.Producers, p) {
			return o, fmt.Errorf("-producers: want go, node and python, each at most once, have %q", *producers)
		}
		o.Producers = append(o.Producers, p)
	}
	if !slices.Contains(o.Producers, producerGo) {
		return o, errors.New("-producers: go is needed (the long queues, the key churn and the schedules are the Go producer's)")
	}
	switch {
	case o.CheckDir != "":
		return o, nil
	case o.Duration <= 0:
		return o, errors.New("-duration must be positive")
	case o.Rate < 0 || o.Schedules < 0:
		return o, errors.New("-rate and -schedules must not be negative")
	case o.Queues < 1 || o.Ordered < 0 || o.Ordered > o.Queues || o.LongQueues < 0:
		return o, errors.New("want -queues ≥ 1, 0 ≤ -ordered ≤ -queues and -long-queues ≥ 0")
	case o.Workers < 2:
		return o, errors.New("-workers must be at least 2 (faults need somewhere for the queues to go)")
	case o.Schedulers < 1:
		return o, errors.New("-schedulers must be at least 1")
	case o.SessionTimeout < time.Second:
		return o, errors.New("-session-timeout must be at least 1s")
	case o.FaultGap <= 0 || o.TaskSleep < 0 || o.CommitWindow < 0 || o.DrainBound <= 0 || o.DrainMax < o.DrainBound:
		return o, errors.New("-fault-gap and -drain must be positive, -drain-max no shorter than -drain; -task-sleep and -commit-window not negative")
	}
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano()
	}
	return o, nil
}

// command is the command line that produced the run (the report shows
// the seed next to it).
func (o options) command() string {
	return strings.TrimSpace("go run ./tools/chaos " + strings.Join(o.args, " "))
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// loadDescription is the load line of the report.
func (o options) loadDescription() string {
	churn := ""
	if slices.Contains(o.Kinds, check.KeyChurn) {
		churn = fmt.Sprintf("; key churn: family %s (prefix %s, ordered, retire_after %s), %d keys cycling enqueue → run → idle → retired → enqueue, and a burst of %d new keys at each %s",
			churnFamily, churnPrefix, churnRetireAfter, churnKeys, churnBurst, check.KeyChurn)
	}
	redis := "standalone Redis"
	if slices.Contains(o.Kinds, check.Sentinel) {
		redis = fmt.Sprintf("Redis Sentinel (a master, a replica, three Sentinels, down-after %s), durable enqueue %s", sentinelDownAfter, onOff(o.Durable))
	}
	return redis + "; " + fmt.Sprintf("up to %d msg/s over %d queues (%d ordered; held back while a queue lags by more than %d; enqueued by the %s producers), %d schedules every 1s (catch-up all), tasks of up to %s; %d more ordered queues of long tasks (%s–%s, one pending at a time); %d workers, %d scheduler candidates, session timeout %s",
		o.Rate, o.Queues, o.Ordered, o.MaxLag, strings.Join(o.Producers, ", "), o.Schedules, o.TaskSleep, o.LongQueues, o.SessionTimeout, 2*o.SessionTimeout, o.Workers, o.Schedulers, o.SessionTimeout) + churn
}
