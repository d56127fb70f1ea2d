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

// profileResult is one CPU profile of a Drover path.
type profileResult struct {
	Path    string        `json:"path"`
	Tasks   int           `json:"tasks"`
	Elapsed time.Duration `json:"elapsed_ns"`
	File    string        `json:"file"`
	Top     string        `json:"top"` // `go tool pprof -top` output, trimmed
}

// profileDrover runs one Drover processing run of kind under the CPU
// profiler, writing the profile into dir.
func profileDrover(ctx context.Context, srv *servers, d *droverSystem, kind taskKind, n, concurrency int, dir string) (*profileResult, error) {
	if err := srv.flushRedis(ctx); err != nil {
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
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", exe, file).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(go tool pprof failed: %v)", err)
	}
	return strings.TrimSpace(string(out))
}
