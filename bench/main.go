// Command bench runs Drover's benchmarks against its peers (asynq,
// gocraft/work) and at fleet scale on private Redis and ZooKeeper servers,
// and writes the figures as JSON and as a markdown section for
// BENCHMARKS.md.
//
//	cd bench && go run . -md section.md -out results.json
//	cd bench && go run . -quick                  # a smoke run of every section
//	cd bench && go run . -sections scale -scale 10x1000,100x10000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/drover-dev/drover/internal/commalist"
	"github.com/drover-dev/drover/internal/localserver"
	"github.com/drover-dev/drover/worker/executor"
)

func main() {
	executor.RunChildIfRequested()
	os.Exit(run())
}

// options are the command line.
type options struct {
	out, md, sections, repo, profileDir  string
	quick                                bool
	throughput                           throughputConfig
	peers, scaleSizes, zkHeap, scaleFar  string
	zkJVM                                string
	scaleFarBudget, scaleStartLimit      time.Duration
	sessionTimeout                       time.Duration
	memoryQueues, schedEntries, schedDue int
}

// results is everything one run measured (the -out JSON).
type results struct {
	Machine    machine           `json:"machine"`
	Command    string            `json:"command"`
	Started    time.Time         `json:"started"`
	Took       time.Duration     `json:"took_ns"`
	Throughput *throughputResult `json:"throughput,omitempty"`
	Profiles   *profileSection   `json:"profiles,omitempty"`
	Scale      []*scaleResult    `json:"scale,omitempty"`
	ScaleFar   *scaleResult      `json:"scale_far,omitempty"` // how far it goes: one size under a time budget
	Memory     []*memoryResult   `json:"memory,omitempty"`
	Scheduler  *schedulerResult  `json:"scheduler,omitempty"`
	Errors     map[string]string `json:"errors,omitempty"`
	SectionsNs map[string]int64  `json:"sections_ns,omitempty"` // wall time of each section run
	Options    map[string]any    `json:"options"`
	sections   map[string]bool   // which ran
	throughCfg throughputConfig  // for the report
	scaleCfg   scaleConfig       // for the report
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.out, "out", "", "write every figure as JSON to this file")
	fs.StringVar(&o.md, "md", "", "write the markdown section to this file (default: standard output)")
	fs.StringVar(&o.sections, "sections", "throughput,profile,scale,memory,scheduler", "sections to run")
	fs.BoolVar(&o.quick, "quick", false, "small sizes and 3 runs: a smoke run of every section (about 2 minutes)")
	fs.StringVar(&o.repo, "repo", "..", "the Drover repository (to build cmd/drover for the memory section)")
	fs.StringVar(&o.profileDir, "profile-dir", "", "keep the CPU profiles in this directory (default: discarded)")
	fs.IntVar(&o.throughput.Runs, "runs", 5, "runs per throughput figure (the median is reported)")
	fs.IntVar(&o.throughput.EnqueueN, "enqueue-n", 100_000, "tasks per enqueue run")
	fs.IntVar(&o.throughput.NoopN, "noop-n", 100_000, "tasks per no-op processing run")
	fs.IntVar(&o.throughput.TrueN, "true-n", 20_000, "tasks per /bin/true processing run")
	fs.IntVar(&o.throughput.Concurrency, "concurrency", 16, "tasks at once in every processing run and the spawn loop")
	fs.StringVar(&o.peers, "peers", "asynq,gocraft", "peers to compare with")
	fs.StringVar(&o.throughput.Only, "workloads", "", "run only the throughput workloads whose name contains this text (e.g. enqueue); default all")
	fs.StringVar(&o.scaleSizes, "scale", "10x1000,100x1000,10x10000,100x10000,10x100000,100x100000", "fleet sizes, members x queues")
	fs.StringVar(&o.scaleFar, "scale-far", "100x1000000", "how far it goes: one more fleet size run under -scale-far-budget (empty: none)")
	fs.DurationVar(&o.scaleFarBudget, "scale-far-budget", 6*time.Minute, "time budget of the -scale-far size, queue creation included")
	fs.StringVar(&o.zkHeap, "zk-heap", "4g", "maximum heap of the private ZooKeeper's JVM (a million queues need several GB)")
	fs.StringVar(&o.zkJVM, "zk-jvm", "production", "the private ZooKeeper's JVM: production (the JVM's own collector and compiler, as a deployment runs) or test (the serial collector and client compiler the tests use)")
	fs.DurationVar(&o.scaleStartLimit, "scale-start-limit", 5*time.Minute, "how long a scale start may take to converge before the size is given up")
	fs.DurationVar(&o.sessionTimeout, "session-timeout", 10*time.Second, "ZooKeeper session timeout of the scale members")
	fs.IntVar(&o.memoryQueues, "memory-queues", 1000, "idle queues owned by the worker of the memory section")
	fs.IntVar(&o.schedEntries, "sched-entries", 100_000, "schedule entries")
	fs.IntVar(&o.schedDue, "sched-due", 10_000, "schedule entries made due at once")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("runs", func() { o.throughput.Runs = 3 })
		def("enqueue-n", func() { o.throughput.EnqueueN = 10_000 })
		def("noop-n", func() { o.throughput.NoopN = 10_000 })
		def("true-n", func() { o.throughput.TrueN = 2_000 })
		def("scale", func() { o.scaleSizes = "10x1000,30x1000" })
		def("scale-far", func() { o.scaleFar = "" })
		def("session-timeout", func() { o.sessionTimeout = 4 * time.Second })
		def("memory-queues", func() { o.memoryQueues = 200 })
		def("sched-entries", func() { o.schedEntries = 10_000 })
		def("sched-due", func() { o.schedDue = 1_000 })
	}
	o.throughput.Peers = commalist.Split(o.peers)
	if o.zkJVM != "production" && o.zkJVM != "test" {
		err := fmt.Errorf("-zk-jvm: %q is neither production nor test", o.zkJVM)
		fmt.Fprintln(os.Stderr, "bench:", err)
		return nil, err
	}
	return o, nil
}

func run() int {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := runAll(ctx, o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if o.out != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(o.out, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	}
	md := renderMarkdown(res)
	if o.md == "" {
		fmt.Print(md)
	} else if err := os.WriteFile(o.md, []byte(md), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if len(res.Errors) > 0 {
		return 1
	}
	return 0
}

// runAll runs the chosen sections. A section that fails is recorded in
// Errors and the others still run.
func runAll(ctx context.Context, o *options, progress io.Writer) (*results, error) {
	sections := map[string]bool{}
	for _, s := range commalist.Split(o.sections) {
		switch s {
		case "throughput", "profile", "scale", "memory", "scheduler":
			sections[s] = true
		default:
			return nil, fmt.Errorf("unknown section %q (want throughput, profile, scale, memory, scheduler)", s)
		}
	}
	res := &results{
		Machine: describeMachine(), Command: commandLine(), Started: time.Now().UTC(),
		Errors: map[string]string{}, SectionsNs: map[string]int64{}, sections: sections, throughCfg: o.throughput,
		scaleCfg: scaleConfig{Sizes: parseSizes(o.scaleSizes), SessionTimeout: o.sessionTimeout, Far: firstSize(o.scaleFar), FarBudget: o.scaleFarBudget, StartLimit: o.scaleStartLimit},
		Options: map[string]any{
			"runs": o.throughput.Runs, "enqueue_n": o.throughput.EnqueueN, "noop_n": o.throughput.NoopN,
			"true_n": o.throughput.TrueN, "concurrency": o.throughput.Concurrency, "peers": o.throughput.Peers,
			"scale": o.scaleSizes, "session_timeout": o.sessionTimeout.String(),
			"scale_far": o.scaleFar, "scale_far_budget": o.scaleFarBudget.String(), "zk_heap": o.zkHeap, "zk_jvm": o.zkJVM,
			"memory_queues": o.memoryQueues, "sched_entries": o.schedEntries, "sched_due": o.schedDue,
		},
	}
	srv, err := startServers(true, localserver.ZKOptions{Heap: o.zkHeap, ProductionJVM: o.zkJVM == "production"})
	if err != nil {
		return nil, err
	}
	defer srv.close()
	res.Machine.Servers = serverVersions(srv)
	begin := time.Now()
	step := func(name string, f func() error) {
		if !sections[name] || ctx.Err() != nil {
			return
		}
		t := time.Now()
		fmt.Fprintf(progress, "bench: %s…\n", name)
		if err := f(); err != nil {
			res.Errors[name] = err.Error()
			fmt.Fprintf(progress, "bench: %s failed: %v\n", name, err)
		}
		res.SectionsNs[name] = int64(time.Since(t))
		fmt.Fprintf(progress, "bench: %s took %s\n", name, time.Since(t).Round(time.Second))
	}
	step("throughput", func() error {
		r, err := runThroughput(ctx, srv, o.throughput, progress)
		res.Throughput = r
		return err
	})
	step("profile", func() error {
		dir := o.profileDir
		if dir == "" {
			dir = filepath.Join(srv.dir, "profiles")
		}
		r, err := runProfiles(ctx, srv, o.throughput, dir)
		res.Profiles = r
		return err
	})
	step("scheduler", func() error {
		res.Scheduler = runScheduler(ctx, srv, o.schedEntries, o.schedDue)
		return errorOf(res.Scheduler.Error)
	})
	step("memory", func() error {
		for _, v := range []memoryVariant{{Name: "defaults (Prometheus metrics on)"}, {Name: "metrics.prometheus = false", Env: []string{"DROVER_METRICS_PROMETHEUS=false"}}} {
			r := runMemory(ctx, srv, o.repo, o.memoryQueues, v)
			res.Memory = append(res.Memory, r)
			if r.Error != "" {
				return errorOf(r.Error)
			}
		}
		return nil
	})
	step("scale", func() error {
		res.Scale, res.ScaleFar = runScale(ctx, srv, res.scaleCfg, progress)
		// The far size is a probe: where it stops is its figure, not a
		// failure of the section.
		for _, r := range res.Scale {
			if r.Error != "" {
				return fmt.Errorf("%d×%d: %s", r.Members, r.Queues, r.Error)
			}
		}
		return nil
	})
	res.Took = time.Since(begin)
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

func errorOf(s string) error {
	if s == "" {
		return nil
	}
	return fmt.Errorf("%s", s)
}

func commandLine() string {
	return "cd bench && go run . " + strings.Join(os.Args[1:], " ")
}
