package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"
)

// profileSection is where the time goes on Drover's two processing paths.
type profileSection struct {
	Inline     *profileResult `json:"inline"`
	Subprocess *profileResult `json:"subprocess"`
	// CPU per /bin/true task of this process (µs): the bare spawn loop,
	// Drover's executor alone (no queue), and Drover's whole path.
	SpawnCPU    float64 `json:"spawn_cpu_us"`
	ExecutorCPU float64 `json:"executor_cpu_us"`
	DroverCPU   float64 `json:"drover_cpu_us"`
	// Rates of the same three, from this one run each.
	SpawnRate, ExecutorRate, DroverRate float64
	// ChildCPU is the /bin/true children's CPU per task (µs), from the
	// spawn loop.
	ChildCPU float64 `json:"child_cpu_us"`
}

// profileResult is one CPU profile of a Drover path.
type profileResult struct {
	Path    string        `json:"path"`
	Tasks   int           `json:"tasks"`
	Elapsed time.Duration `json:"elapsed_ns"`
	File    string        `json:"file"`
	Top     string        `json:"top"` // `go tool pprof -top` output
}

func runProfiles(ctx context.Context, srv *servers, cfg throughputConfig, dir string) (*profileSection, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	d, err := newDroverSystem(ctx, srv)
	if err != nil {
		return nil, err
	}
	defer d.close()
	ps := &profileSection{}
	// Smaller than the throughput runs: a profile and CPU per task settle
	// well before that, and the section should stay short.
	noopN, n := min(cfg.NoopN, 50_000), min(cfg.TrueN, 5_000)
	if ps.Inline, err = profileDrover(ctx, srv, d, kindNoop, noopN, cfg.Concurrency, dir); err != nil {
		return ps, err
	}
	if ps.Subprocess, err = profileDrover(ctx, srv, d, kindTrue, n, cfg.Concurrency, dir); err != nil {
		return ps, err
	}
	perTask := func(c cpuTimes) (float64, float64) {
		return float64(c.self.Microseconds()) / float64(n), float64(c.children.Microseconds()) / float64(n)
	}
	c0 := readCPU()
	e, err := spawnLoop(ctx, n, cfg.Concurrency)
	if err != nil {
		return ps, err
	}
	c1 := readCPU()
	ps.SpawnCPU, ps.ChildCPU = perTask(c1.sub(c0))
	ps.SpawnRate = rate(n, e)
	if e, err = executorLoop(ctx, d.exec, n, cfg.Concurrency); err != nil {
		return ps, err
	}
	c2 := readCPU()
	ps.ExecutorCPU, _ = perTask(c2.sub(c1))
	ps.ExecutorRate = rate(n, e)
	if err := srv.flushRedis(ctx); err != nil {
		return ps, err
	}
	if err := d.prepare(ctx, kindTrue, n); err != nil {
		return ps, err
	}
	c2 = readCPU()
	if e, err = d.process(ctx, kindTrue, n, cfg.Concurrency); err != nil {
		return ps, err
	}
	ps.DroverCPU, _ = perTask(readCPU().sub(c2))
	ps.DroverRate = rate(n, e)
	return ps, nil
}

// profileDrover runs one Drover processing run of kind under the CPU
// profiler, writing the profile into dir.
func profileDrover(ctx context.Context, srv *servers, d *droverSystem, kind taskKind, n, concurrency int, dir string) (*profileResult, error) {
	if err := srv.flushRedis(ctx); err != nil {
		return nil, err
	}
	if err := d.prepare(ctx, kind, n); err != nil {
		return nil, err
	}
	file := filepath.Join(dir, fmt.Sprintf("cpu-%s.pprof", kind))
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("create profile: %w", err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, fmt.Errorf("start CPU profile: %w", err)
	}
	elapsed, err := d.process(ctx, kind, n, concurrency)
	pprof.StopCPUProfile()
	if err != nil {
		return nil, err
	}
	return &profileResult{Path: string(kind), Tasks: n, Elapsed: elapsed, File: file, Top: pprofTop(file)}, nil
}

// pprofTop returns the head of `go tool pprof -top` for a profile, or why
// it could not be produced.
func pprofTop(file string) string {
	exe, _ := os.Executable()
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=12", exe, file).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(go tool pprof failed: %v)", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var keep []string
	for _, l := range lines {
		// Drop the header lines that name the temporary binary and time.
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Time:") || strings.HasPrefix(l, "Type:") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}
