package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/shlex"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/drover-dev/drover"
)

// queueFlags are the flags of `queue create` and `queue update`. Only the
// flags given change the configuration.
type queueFlags struct {
	file                             string
	weight, concurrency, maxAttempts int
	ordered                          bool
	timeout, retention, backoffBase  string
	backoffMax                       string
	backoffJitter                    float64
	tags, tasks, rmTasks, pools      []string
	limitAS, limitCPU, limitFiles    int64
	user, group                      string
	clearTags                        bool
	outcomeRetention                 string
	outcomeMax, outcomeStdout        int
	rateLimit                        float64 // messages a second (0: none)
	rateBurst                        int
	onFailure                        string
}

func (qf *queueFlags) register(cmd *cobra.Command, update bool) {
	f := cmd.Flags()
	f.StringVarP(&qf.file, "file", "f", "", "start from this queue config JSON (drover.QueueConfig; - for stdin)")
	f.IntVar(&qf.weight, "weight", 0, "balancing weight (default 1)")
	f.IntVar(&qf.concurrency, "concurrency", 0, "tasks at once (default 4; 1 when ordered)")
	f.BoolVar(&qf.ordered, "ordered", false, "strict FIFO: one task at a time, retries block the queue")
	f.StringVar(&qf.timeout, "timeout", "", "per attempt, e.g. 30s (default 5m)")
	f.IntVar(&qf.maxAttempts, "max-attempts", 0, "runs before dead-lettering (default 5)")
	f.Float64Var(&qf.rateLimit, "rate-limit", 0, "start at most this many messages a second (0: no limit, and no burst)")
	f.IntVar(&qf.rateBurst, "rate-burst", 0, "messages that may start at once within the rate limit (default: a hundredth of a second's, at least 1)")
	f.StringVar(&qf.onFailure, "on-failure", "", "what an ordered queue does with a head that used its attempts: dead_letter (default) or park")
	f.StringVar(&qf.backoffBase, "backoff-base", "", "first retry delay (default 1s), doubling")
	f.StringVar(&qf.backoffMax, "backoff-max", "", "longest retry delay (default 10m)")
	f.Float64Var(&qf.backoffJitter, "backoff-jitter", 0, "random spread of retry delays, 0–1")
	f.StringVar(&qf.retention, "retention", "", "keep done messages this long, for replay (default 0)")
	f.StringVar(&qf.outcomeRetention, "outcome-retention", "", "keep records of finished jobs this long, for `ctl job` (default 24h; 0: off)")
	f.IntVar(&qf.outcomeMax, "outcome-max", 0, "keep at most this many outcome records (default 10000)")
	f.IntVar(&qf.outcomeStdout, "outcome-stdout", 0, "keep this many bytes of a succeeded task's stdout in its record (default 0, at most 65536)")
	f.StringArrayVar(&qf.tags, "tag", nil, "only members with this tag may own the queue (repeatable)")
	f.StringArrayVar(&qf.tasks, "task", nil, "route NAME=ARGV (a command, split like a shell without running one), NAME=@go or NAME=@inline (registered Go handlers); NAME * matches any task (repeatable)")
	f.StringArrayVar(&qf.pools, "pool", nil, "run NAME's tasks in warm pooled children: NAME or NAME=max_tasks_per_child=N,max_memory_per_child=SIZE,max_child_age=DURATION (docs/process-pool.md; repeatable)")
	f.Int64Var(&qf.limitAS, "limit-as", 0, "address-space limit of task processes, bytes")
	f.Int64Var(&qf.limitCPU, "limit-cpu", 0, "CPU-time limit of task processes, seconds")
	f.Int64Var(&qf.limitFiles, "limit-nofile", 0, "open-files limit of task processes")
	f.StringVar(&qf.user, "user", "", "run task processes as this user")
	f.StringVar(&qf.group, "group", "", "run task processes as this group")
	if update {
		f.StringArrayVar(&qf.rmTasks, "rm-task", nil, "remove the route of this task (repeatable)")
		f.BoolVar(&qf.clearTags, "clear-tags", false, "remove every tag (before --tag)")
	}
}

// apply changes cfg by the flags that were given on the command line.
func (qf *queueFlags) apply(fs *pflag.FlagSet, stdin io.Reader, cfg *drover.QueueConfig) error {
	if qf.file != "" {
		data, err := readFileFlag(qf.file, stdin)
		if err != nil {
			return err
		}
		name := cfg.Name
		var fromFile drover.QueueConfig
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fromFile); err != nil {
			return usagef("-f %s: not a queue config: %v", qf.file, err)
		}
		if fromFile.Name != "" && fromFile.Name != name {
			return usagef("-f %s: names queue %q, not %q", qf.file, fromFile.Name, name)
		}
		*cfg = fromFile
		cfg.Name = name
	}
	changed := fs.Changed
	dur := func(flag, v string, dst *drover.Duration) error {
		if !changed(flag) {
			return nil
		}
		d, err := time.ParseDuration(v)
		if v == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 {
			return usagef("--%s %q: want a duration ≥ 0 like 30s or 5m", flag, v)
		}
		*dst = drover.Duration(d)
		return nil
	}
	for _, f := range []struct {
		flag string
		v    float64
	}{{"rate-limit", qf.rateLimit}, {"backoff-jitter", qf.backoffJitter}} {
		if changed(f.flag) && (math.IsNaN(f.v) || math.IsInf(f.v, 0)) {
			return usagef("--%s %g: want a finite number", f.flag, f.v)
		}
	}
	if changed("rate-limit") && qf.rateLimit == 0 {
		// --rate-limit 0 removes the limit, and its burst with it: a
		// burst without a rate limits nothing.
		if changed("rate-burst") && qf.rateBurst != 0 {
			return usagef("--rate-burst %d with --rate-limit 0: a burst needs a rate (--rate-limit 0 removes the limit and its burst)", qf.rateBurst)
		}
		cfg.RateLimit.Burst = 0
	}
	given(fs, "weight", &cfg.Weight, qf.weight)
	given(fs, "concurrency", &cfg.Concurrency, qf.concurrency)
	given(fs, "ordered", &cfg.Ordered, qf.ordered)
	given(fs, "max-attempts", &cfg.MaxAttempts, qf.maxAttempts)
	given(fs, "rate-limit", &cfg.RateLimit.PerSecond, qf.rateLimit)
	given(fs, "rate-burst", &cfg.RateLimit.Burst, qf.rateBurst)
	given(fs, "on-failure", &cfg.OnFailure, qf.onFailure)
	given(fs, "backoff-jitter", &cfg.Backoff.Jitter, qf.backoffJitter)
	for _, d := range []struct {
		flag, v string
		dst     *drover.Duration
	}{
		{"timeout", qf.timeout, &cfg.Timeout}, {"retention", qf.retention, &cfg.Retention},
		{"backoff-base", qf.backoffBase, &cfg.Backoff.Base}, {"backoff-max", qf.backoffMax, &cfg.Backoff.Max},
	} {
		if err := dur(d.flag, d.v, d.dst); err != nil {
			return err
		}
	}
	if changed("outcome-retention") {
		var d drover.Duration
		if err := dur("outcome-retention", qf.outcomeRetention, &d); err != nil {
			return err
		}
		cfg.Outcomes.Retention = &d
	}
	given(fs, "outcome-max", &cfg.Outcomes.Max, qf.outcomeMax)
	given(fs, "outcome-stdout", &cfg.Outcomes.StdoutTail, qf.outcomeStdout)
	if qf.clearTags {
		cfg.Tags = nil
	}
	cfg.Tags = append(cfg.Tags, qf.tags...)
	for _, name := range qf.rmTasks {
		if _, ok := cfg.Tasks[name]; !ok {
			return fmt.Errorf("--rm-task %s: queue %s routes no such task: %w", name, cfg.Name, drover.ErrNotFound)
		}
		delete(cfg.Tasks, name)
	}
	for _, spec := range qf.tasks {
		name, route, err := parseTaskRoute(spec)
		if err != nil {
			return err
		}
		if cfg.Tasks == nil {
			cfg.Tasks = map[string]drover.TaskRoute{}
		}
		cfg.Tasks[name] = route
	}
	for _, spec := range qf.pools {
		name, pool, err := parsePoolSpec(spec)
		if err != nil {
			return err
		}
		route, ok := cfg.Tasks[name]
		if !ok {
			return usagef("--pool %s: queue %s has no route for task %q (give it with --task)", spec, cfg.Name, name)
		}
		route.Pool = pool
		cfg.Tasks[name] = route
	}
	given(fs, "limit-as", &cfg.Limits.AddressSpace, qf.limitAS)
	given(fs, "limit-cpu", &cfg.Limits.CPUSeconds, qf.limitCPU)
	given(fs, "limit-nofile", &cfg.Limits.OpenFiles, qf.limitFiles)
	given(fs, "user", &cfg.User, qf.user)
	given(fs, "group", &cfg.Group, qf.group)
	return nil
}

// given sets *dst to v when flag was on the command line.
func given[T any](fs *pflag.FlagSet, flag string, dst *T, v T) {
	if fs.Changed(flag) {
		*dst = v
	}
}

// parseTaskRoute reads NAME=ARGV, NAME=@go or NAME=@inline.
func parseTaskRoute(spec string) (string, drover.TaskRoute, error) {
	name, rest, ok := strings.Cut(spec, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.TrimSpace(rest) == "" {
		return "", drover.TaskRoute{}, usagef("--task %q: want NAME=ARGV, NAME=@go or NAME=@inline", spec)
	}
	switch strings.TrimSpace(rest) {
	case "@go":
		return name, drover.TaskRoute{Go: true}, nil
	case "@inline":
		return name, drover.TaskRoute{Inline: true}, nil
	}
	argv, err := shlex.Split(rest)
	if err != nil || len(argv) == 0 {
		return "", drover.TaskRoute{}, usagef("--task %q: cannot split the command: %v", spec, err)
	}
	return name, drover.TaskRoute{Command: argv}, nil
}

// parsePoolSpec reads NAME or NAME=key=value,… with the keys of
// drover.PoolConfig.
func parsePoolSpec(spec string) (string, *drover.PoolConfig, error) {
	name, rest, _ := strings.Cut(spec, "=")
	name = strings.TrimSpace(name)
	if name == "" {
		return "", nil, usagef("--pool %q: want NAME or NAME=max_tasks_per_child=N,…", spec)
	}
	pool := &drover.PoolConfig{}
	for _, kv := range strings.Split(rest, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		bad := func(want string) error {
			return usagef("--pool %q: %s: want %s, have %q", spec, k, want, v)
		}
		switch {
		case !ok:
			return "", nil, usagef("--pool %q: want key=value, have %q", spec, kv)
		case k == "max_tasks_per_child":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return "", nil, bad("a number ≥ 0")
			}
			pool.MaxTasksPerChild = n
		case k == "max_memory_per_child":
			b, err := drover.ParseByteSize(v)
			if err != nil {
				return "", nil, bad("a size like 200MiB")
			}
			pool.MaxMemoryPerChild = b
		case k == "max_child_age":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return "", nil, bad("a duration like 1h")
			}
			pool.MaxChildAge = drover.Duration(d)
		default:
			return "", nil, usagef("--pool %q: unknown key %q (max_tasks_per_child, max_memory_per_child, max_child_age)", spec, k)
		}
	}
	return name, pool, nil
}
