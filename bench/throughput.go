package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// throughputConfig sizes the throughput section.
type throughputConfig struct {
	Runs        int // runs per figure; the median is reported
	EnqueueN    int // tasks per enqueue run
	NoopN       int // tasks per no-op processing run
	TrueN       int // tasks per /bin/true processing run
	Concurrency int // tasks at once in every processing run and the spawn loop
	Peers       []string
	Only        string // run only workloads whose name contains it; "": all
}

// workloadResult is one workload's figures: tasks/s of every run of every
// system, and their medians.
type workloadResult struct {
	Workload string               `json:"workload"`
	Tasks    int                  `json:"tasks"`
	Runs     map[string][]float64 `json:"runs_tasks_per_s"`
	Median   map[string]float64   `json:"median_tasks_per_s"`
	// CPU is this process's CPU time per task (µs, median of the runs):
	// the client's and, for processing, the worker's own cost, without
	// Redis's and without the /bin/true children's.
	CPU map[string]float64 `json:"median_cpu_us_per_task"`
	// RedisCPU is the Redis server's CPU time per task (µs, median).
	RedisCPU map[string]float64 `json:"median_redis_cpu_us_per_task"`
	// CommitShare is, for Drover's processing runs, the median share of
	// the run its queue loop spent waiting for ZooKeeper commits.
	CommitShare float64  `json:"drover_commit_share,omitempty"`
	Order       []string `json:"systems"`
}

type throughputResult struct {
	Config    throughputConfig  `json:"config"`
	Workloads []*workloadResult `json:"workloads"`
}

// workload is one row group of the table: a name and how to run it on a
// system ("" for a system that does not take part).
type workload struct {
	name    string
	tasks   int
	prepare func(ctx context.Context, s system) error // not timed; nil: nothing
	run     func(ctx context.Context, s system) (time.Duration, error)
	extra   func(ctx context.Context) (time.Duration, error) // the spawn loop, for /bin/true
	// droverOnly: the peers have nothing to compare (a Go child per task).
	droverOnly bool
	// enqueue: an enqueue workload, which the enqueue-only entrants (Drover
	// without wake-ups) run too.
	enqueue bool
}

// The pool workloads (issue 17): Drover's no-op Go handler in pooled
// children against the peers' in-process no-op handlers, and in a child per
// task (Drover only; a process start per task, so fewer tasks).
const (
	poolWorkload    = "process no-op: Drover in pooled Go children, peers in process"
	goChildWorkload = "process no-op: Drover in a Go child per task"
)

// droverKind is kind for Drover and the in-process no-op for the peers.
func droverKind(s system, kind taskKind) taskKind {
	if s.name() == "drover" {
		return kind
	}
	return kindNoop
}

// goChildTasks sizes the per-task Go child workload: about as long a run
// as the /bin/true one.
func goChildTasks(cfg throughputConfig) int { return max(cfg.TrueN/20, 100) }

func runThroughput(ctx context.Context, srv *servers, cfg throughputConfig, progress io.Writer) (*throughputResult, error) {
	dr, err := newDroverSystem(ctx, srv)
	if err != nil {
		return nil, err
	}
	systems := []system{dr}
	for _, p := range cfg.Peers {
		switch p {
		case "asynq":
			systems = append(systems, peerSystem{newAsynqPeer(srv)})
		case "gocraft":
			systems = append(systems, peerSystem{newGocraftPeer(srv)})
		default:
			return nil, fmt.Errorf("unknown peer %q (want asynq, gocraft)", p)
		}
	}
	nowake, err := newDroverNoWake(srv)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, s := range systems {
			s.close()
		}
		nowake.rdb.Close()
	}()
	workloads := []workload{
		{name: "enqueue, 1 goroutine", tasks: cfg.EnqueueN, enqueue: true, run: func(ctx context.Context, s system) (time.Duration, error) {
			return s.enqueue(ctx, cfg.EnqueueN, 1)
		}},
		{name: "enqueue, 8 goroutines", tasks: cfg.EnqueueN, enqueue: true, run: func(ctx context.Context, s system) (time.Duration, error) {
			return s.enqueue(ctx, cfg.EnqueueN, 8)
		}},
		{name: "process no-op", tasks: cfg.NoopN, prepare: func(ctx context.Context, s system) error {
			return s.prepare(ctx, kindNoop, cfg.NoopN)
		}, run: func(ctx context.Context, s system) (time.Duration, error) {
			return s.process(ctx, kindNoop, cfg.NoopN, cfg.Concurrency)
		}},
		{name: poolWorkload, tasks: cfg.NoopN / 5, prepare: func(ctx context.Context, s system) error {
			return s.prepare(ctx, droverKind(s, kindGoPool), cfg.NoopN/5)
		}, run: func(ctx context.Context, s system) (time.Duration, error) {
			return s.process(ctx, droverKind(s, kindGoPool), cfg.NoopN/5, cfg.Concurrency)
		}},
		{name: goChildWorkload, tasks: goChildTasks(cfg), droverOnly: true, prepare: func(ctx context.Context, s system) error {
			return s.prepare(ctx, kindGoChild, goChildTasks(cfg))
		}, run: func(ctx context.Context, s system) (time.Duration, error) {
			return s.process(ctx, kindGoChild, goChildTasks(cfg), cfg.Concurrency)
		}},
		{name: "process /bin/true", tasks: cfg.TrueN, prepare: func(ctx context.Context, s system) error {
			return s.prepare(ctx, kindTrue, cfg.TrueN)
		}, run: func(ctx context.Context, s system) (time.Duration, error) {
			return s.process(ctx, kindTrue, cfg.TrueN, cfg.Concurrency)
		}, extra: func(ctx context.Context) (time.Duration, error) {
			return spawnLoop(ctx, cfg.TrueN, cfg.Concurrency)
		}},
	}
	res := &throughputResult{Config: cfg}
	for _, wl := range workloads {
		if !strings.Contains(wl.name, cfg.Only) {
			continue
		}
		wr := &workloadResult{Workload: wl.name, Tasks: wl.tasks, Runs: map[string][]float64{}, Median: map[string]float64{}, CPU: map[string]float64{}, RedisCPU: map[string]float64{}}
		cpu, rcpu := map[string][]float64{}, map[string][]float64{}
		var commitShares []float64
		type entrant struct {
			name    string
			prepare func(ctx context.Context) error
			run     func(ctx context.Context) (time.Duration, error)
		}
		var entrants []entrant
		for _, s := range systems {
			if wl.droverOnly && s != system(dr) {
				continue
			}
			e := entrant{name: s.name(), run: func(ctx context.Context) (time.Duration, error) { return wl.run(ctx, s) }}
			if wl.prepare != nil {
				e.prepare = func(ctx context.Context) error { return wl.prepare(ctx, s) }
			}
			entrants = append(entrants, e)
		}
		if wl.enqueue {
			entrants = append(entrants, entrant{name: droverNoWakeName, run: func(ctx context.Context) (time.Duration, error) {
				return wl.run(ctx, nowake)
			}})
		}
		if wl.extra != nil {
			entrants = append(entrants, entrant{name: spawnLoopName, run: wl.extra})
		}
		for _, e := range entrants {
			wr.Order = append(wr.Order, e.name)
		}
		// Alternate: in run r every entrant runs once, starting with a
		// different one each time, so that no system always goes first.
		for r := 0; r < cfg.Runs; r++ {
			for k := range entrants {
				e := entrants[(r+k)%len(entrants)]
				if err := srv.flushRedis(ctx); err != nil {
					return nil, err
				}
				if e.prepare != nil {
					if err := e.prepare(ctx); err != nil {
						return nil, fmt.Errorf("%s on %s, run %d: %w", wl.name, e.name, r+1, err)
					}
				}
				r0, err := srv.redisCPU(ctx)
				if err != nil {
					return nil, err
				}
				c0 := readCPU()
				dr.lastCommitWait = 0
				elapsed, err := e.run(ctx)
				if err != nil {
					return nil, fmt.Errorf("%s on %s, run %d: %w", wl.name, e.name, r+1, err)
				}
				used := readCPU().sub(c0)
				cpu[e.name] = append(cpu[e.name], float64(used.self.Microseconds())/float64(wl.tasks))
				r1, err := srv.redisCPU(ctx)
				if err != nil {
					return nil, err
				}
				rcpu[e.name] = append(rcpu[e.name], float64((r1-r0).Microseconds())/float64(wl.tasks))
				if e.name == dr.name() && dr.lastCommitWait > 0 {
					commitShares = append(commitShares, dr.lastCommitWait.Seconds()/elapsed.Seconds())
				}
				wr.Runs[e.name] = append(wr.Runs[e.name], rate(wl.tasks, elapsed))
				fmt.Fprintf(progress, "  %-22s %-14s run %d: %8.0f tasks/s (%s)\n", wl.name, e.name, r+1, rate(wl.tasks, elapsed), elapsed.Round(time.Millisecond))
			}
		}
		for name, runs := range wr.Runs {
			wr.Median[name] = median(runs)
			wr.CPU[name] = median(cpu[name])
			wr.RedisCPU[name] = median(rcpu[name])
		}
		if len(commitShares) > 0 {
			wr.CommitShare = median(commitShares)
		}
		res.Workloads = append(res.Workloads, wr)
	}
	return res, nil
}

const spawnLoopName = "bare spawn loop"
