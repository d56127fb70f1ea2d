// Command bench runs Drover's benchmarks against its peers and at fleet
// scale, and writes the results as JSON and as a markdown section of
// BENCHMARKS.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/drover-dev/drover/worker"
)

func main() {
	worker.RunChildIfRequested()
	os.Exit(run())
}

func run() int {
	tc := throughputConfig{}
	flag.IntVar(&tc.Runs, "runs", 5, "runs per throughput figure (the median is reported)")
	flag.IntVar(&tc.EnqueueN, "enqueue-n", 100_000, "tasks per enqueue run")
	flag.IntVar(&tc.NoopN, "noop-n", 100_000, "tasks per no-op processing run")
	flag.IntVar(&tc.TrueN, "true-n", 20_000, "tasks per /bin/true processing run")
	flag.IntVar(&tc.Concurrency, "concurrency", 16, "tasks at once in every processing run")
	peers := flag.String("peers", "asynq,gocraft", "peers to compare with")
	profileOnly := flag.String("profile-only", "", "debug: only profile this kind (noop, true) into /tmp")
	flag.Parse()
	tc.Peers = strings.Split(*peers, ",")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := startServers(true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer srv.close()
	start := time.Now()
	if *profileOnly == "diag" {
		d, err := newDroverSystem(ctx, srv)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		for r := 0; r < tc.Runs; r++ {
			c0 := readCPU()
			e1, _ := spawnLoop(ctx, tc.TrueN, tc.Concurrency)
			c1 := readCPU()
			e2, err := executorLoop(ctx, d.exec, tc.TrueN, tc.Concurrency)
			c2 := readCPU()
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				return 1
			}
			e3, err := d.process(ctx, kindTrue, tc.TrueN, tc.Concurrency)
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				return 1
			}
			c3 := readCPU()
			per := func(c cpuTimes) string {
				return fmt.Sprintf("self %.0fus child %.0fus", float64(c.self.Microseconds())/float64(tc.TrueN), float64(c.children.Microseconds())/float64(tc.TrueN))
			}
			fmt.Println(per(c1.sub(c0)), "|", per(c2.sub(c1)), "|", per(c3.sub(c2)))
			fmt.Printf("spawn %.0f  executor %.0f  drover %.0f\n", rate(tc.TrueN, e1), rate(tc.TrueN, e2), rate(tc.TrueN, e3))
		}
		return 0
	}
	if *profileOnly == "scale" {
		rs := runScale(ctx, srv, scaleConfig{Sizes: parseSizes(os.Getenv("BENCH_SIZES")), SessionTimeout: 10 * time.Second}, os.Stderr)
		b, _ := json.MarshalIndent(rs, "", "  ")
		fmt.Println(string(b))
		return 0
	}
	if *profileOnly == "exec" {
		d, err := newDroverSystem(ctx, srv)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		f, _ := os.Create("/tmp/cpu-exec.pprof")
		pprof.StartCPUProfile(f)
		e, err := executorLoop(ctx, d.exec, tc.TrueN, tc.Concurrency)
		pprof.StopCPUProfile()
		f.Close()
		f, _ = os.Create("/tmp/cpu-spawn.pprof")
		pprof.StartCPUProfile(f)
		e2, _ := spawnLoop(ctx, tc.TrueN, tc.Concurrency)
		pprof.StopCPUProfile()
		f.Close()
		fmt.Println(rate(tc.TrueN, e), rate(tc.TrueN, e2), err)
		return 0
	}
	if *profileOnly == "enqueue" {
		d, err := newDroverSystem(ctx, srv)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		a := newAsynqSystem(srv)
		for r := 0; r < tc.Runs; r++ {
			f, _ := os.Create("/tmp/cpu-enqueue.pprof")
			pprof.StartCPUProfile(f)
			c0 := readCPU()
			e1, err := d.enqueue(ctx, tc.EnqueueN, 1)
			c1 := readCPU()
			pprof.StopCPUProfile()
			f.Close()
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				return 1
			}
			e2, _ := a.enqueue(ctx, tc.EnqueueN, 1)
			c2 := readCPU()
			fmt.Printf("drover %.0f/s %.0fus/task  asynq %.0f/s %.0fus/task\n", rate(tc.EnqueueN, e1), float64(c1.sub(c0).self.Microseconds())/float64(tc.EnqueueN), rate(tc.EnqueueN, e2), float64(c2.sub(c1).self.Microseconds())/float64(tc.EnqueueN))
		}
		rdb := srv.redisClient()
		fmt.Println(rdb.Info(ctx, "commandstats").Val())
		return 0
	}
	if *profileOnly != "" {
		d, err := newDroverSystem(ctx, srv)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		n := tc.NoopN
		if *profileOnly == "true" {
			n = tc.TrueN
		}
		pr, err := profileDrover(ctx, srv, d, taskKind(*profileOnly), n, tc.Concurrency, "/tmp")
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		fmt.Println(pr.Elapsed, rate(n, pr.Elapsed))
		fmt.Println(pr.Top)
		return 0
	}
	res, err := runThroughput(ctx, srv, tc, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	for _, w := range res.Workloads {
		fmt.Println(w.Workload, w.Median)
	}
	fmt.Fprintln(os.Stderr, "took", time.Since(start))
	return 0
}
