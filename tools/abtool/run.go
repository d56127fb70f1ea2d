package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// wholeRun is the benchmark name under which a run's own figures are kept
// (its CPU time), apart from the benchmarks' lines.
const wholeRun = "(whole run)"

// cpuPerOp is the unit of a run's CPU time divided by its iterations.
const cpuPerOp = "cpu-ns/op"

// runResult is one run of one side's test binary.
type runResult struct {
	Results []result
	// CPU is user+system time of the test process and of every process it
	// started and waited for (os.ProcessState, from wait4): the private
	// servers internal/testing/testenv starts are stopped and waited for by
	// testenv.Run, so their CPU is in it too.
	CPU    time.Duration
	Wall   time.Duration
	Output []byte
}

// runOnce runs rev's test binary in its package directory with args and
// returns its results. A run that fails, or that prints no result line,
// is an error carrying the end of its output: a side that did not run its
// benchmark must not be compared as if it had.
func runOnce(ctx context.Context, rev *revision, args []string, echo io.Writer) (runResult, error) {
	cmd := exec.CommandContext(ctx, rev.Binary, args...)
	cmd.Dir = rev.PkgDir
	var out bytes.Buffer
	var w io.Writer = &out
	if echo != nil {
		w = io.MultiWriter(&out, echo)
	}
	cmd.Stdout = w
	cmd.Stderr = w
	// A server the binary started outlives a killed binary by at most its
	// parent-death signal; do not wait on its inherited pipes for long.
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := runResult{Wall: time.Since(start), Output: out.Bytes()}
	if cmd.ProcessState != nil {
		r.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return r, fmt.Errorf("%s (%s) failed: %w\n%s", rev.Name, rev.Short, err, tail(out.Bytes(), 40))
	}
	r.Results = parseResults(out.Bytes())
	if len(r.Results) == 0 {
		return r, fmt.Errorf("%s (%s) printed no benchmark result (does -bench match a benchmark there?):\n%s", rev.Name, rev.Short, tail(out.Bytes(), 40))
	}
	return r, nil
}

// benchArgs are the test binary's flags for every run of both sides.
func benchArgs(c config) []string {
	args := []string{"-test.run", "^$", "-test.bench", c.Bench, "-test.benchmem", "-test.count", fmt.Sprint(c.Count)}
	if c.Benchtime != "" {
		args = append(args, "-test.benchtime", c.Benchtime)
	}
	if c.Timeout > 0 {
		args = append(args, "-test.timeout", c.Timeout.String())
	}
	return args
}

// samples holds one side's values per benchmark and unit, with the order
// in which benchmarks and units first appeared (the report keeps it).
type samples struct {
	values map[string]map[string][]float64
	names  []string
	units  map[string][]string
	// SharedCPU counts runs whose lines came from more than one benchmark:
	// their CPU cannot be divided among them.
	SharedCPU int
}

func newSamples() *samples {
	return &samples{values: map[string]map[string][]float64{}, units: map[string][]string{}}
}

func (s *samples) add(name, unit string, v float64) {
	if s.values[name] == nil {
		s.values[name] = map[string][]float64{}
		s.names = append(s.names, name)
	}
	if _, ok := s.values[name][unit]; !ok {
		s.units[name] = append(s.units[name], unit)
	}
	s.values[name][unit] = append(s.values[name][unit], v)
}

// addRun records every metric of every line of r; then CPU per op when all
// of r's lines are of one benchmark (its CPU over their iterations: an
// upper bound, since it also holds the process's start, the benchmark's
// set-up and its calibration runs); otherwise, when fixedIterations
// (-benchtime Nx: both sides do the same work), the run's CPU as a whole.
func (s *samples) addRun(r runResult, fixedIterations bool) {
	var iterations int64
	one := true
	for _, res := range r.Results {
		for _, m := range res.Metrics {
			s.add(res.Name, m.Unit, m.Value)
		}
		iterations += res.N
		one = one && res.Name == r.Results[0].Name
	}
	if one {
		s.add(r.Results[0].Name, cpuPerOp, float64(r.CPU.Nanoseconds())/float64(iterations))
		return
	}
	s.SharedCPU++
	if fixedIterations {
		s.add(wholeRun, "cpu-s", r.CPU.Seconds())
	}
}

func tail(out []byte, lines int) string {
	ls := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}
