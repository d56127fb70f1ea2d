// Command abtool judges a change by a benchmark run against its parent on
// the same machine in the same session: it builds the test binary of one
// package at two revisions, alternates their runs (A, B, A, B, …) and
// prints a Markdown table of each metric's median and min–max spread per
// side, the ratio B/A, CPU per op and a verdict that is "not measured"
// whenever the spreads overlap. docs/benchmarks.md ("A/B: one benchmark,
// two revisions") says how to read it.
//
//	go run ./tools/abtool -a HEAD~1 -b HEAD -bench '^BenchmarkEnqueue$' -pkg ./queue -rounds 5
//
// The caller's working tree is never touched: each revision is checked out
// into a temporary git worktree, removed at the end.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// config is one A/B comparison. Fields set by flags are named by them in
// validation errors.
type config struct {
	Dir       string // the directory -pkg is relative to, inside the repository
	A, B      string // revisions
	Bench     string // -test.bench
	Pkg       string // a package path or ./dir, as for go test
	Rounds    int    // runs of each side, alternated
	Benchtime string // -test.benchtime; "" for the testing package's default
	Count     int    // -test.count of every run
	Tags      string // build tags of the test binaries
	Timeout   time.Duration
	Raw       string // a directory for a.txt and b.txt, every run's output
	Verbose   bool   // echo every run's output to stderr
	Cmdline   string // the command as the report shows it
}

func (c config) validate() error {
	switch {
	case c.A == "":
		return errors.New("-a: a revision is required")
	case c.B == "":
		return errors.New("-b: a revision is required")
	case c.Bench == "":
		return errors.New("-bench: a regular expression naming the benchmarks is required")
	case c.Pkg == "":
		return errors.New("-pkg: the package whose benchmarks run is required (e.g. ./queue)")
	case c.Rounds < 1:
		return fmt.Errorf("-rounds: must be at least 1, have %d", c.Rounds)
	case c.Count < 1:
		return fmt.Errorf("-count: must be at least 1, have %d", c.Count)
	case c.Timeout < 0:
		return fmt.Errorf("-timeout: must not be negative, have %s", c.Timeout)
	}
	for _, level := range strings.Split(c.Bench, "/") {
		if _, err := regexp.Compile(level); err != nil {
			return fmt.Errorf("-bench: %w", err)
		}
	}
	if c.Benchtime != "" && !validBenchtime(c.Benchtime) {
		return fmt.Errorf("-benchtime: want a duration (2s) or a count (100x), have %q", c.Benchtime)
	}
	return nil
}

func validBenchtime(s string) bool {
	if n, ok := strings.CutSuffix(s, "x"); ok {
		var i int
		_, err := fmt.Sscanf(n, "%d", &i)
		return err == nil && i > 0 && fmt.Sprint(i) == n
	}
	d, err := time.ParseDuration(s)
	return err == nil && d > 0
}

// fixedIterations reports whether every run does the same number of
// iterations (-benchtime Nx), so that a whole run's CPU compares.
func (c config) fixedIterations() bool { return strings.HasSuffix(c.Benchtime, "x") }

func main() {
	var c config
	flag.StringVar(&c.A, "a", "HEAD~1", "revision A, the baseline (any git revision)")
	flag.StringVar(&c.B, "b", "HEAD", "revision B, the change")
	flag.StringVar(&c.Bench, "bench", "", "benchmarks to run (the test binary's -test.bench)")
	flag.StringVar(&c.Pkg, "pkg", "", "the package, relative to this directory (e.g. ./queue)")
	flag.IntVar(&c.Rounds, "rounds", 5, "runs of each side, alternated A, B, A, B, …")
	flag.StringVar(&c.Benchtime, "benchtime", "", "each run's -test.benchtime (2s, 1000x); the testing package's default when empty")
	flag.IntVar(&c.Count, "count", 1, "each run's -test.count")
	flag.StringVar(&c.Tags, "tags", "", "build tags of both test binaries")
	flag.DurationVar(&c.Timeout, "timeout", 0, "each run's -test.timeout (0: none)")
	flag.StringVar(&c.Raw, "raw", "", "a directory to write every run's output to, as a.txt and b.txt (benchstat reads them)")
	flag.BoolVar(&c.Verbose, "v", false, "echo every run's output to stderr")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./tools/abtool -a REV -b REV -bench REGEXP -pkg PKG [-rounds 5] [-benchtime 2s] [-count 1]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "abtool: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	c.Dir = "."
	c.Cmdline = "go run ./tools/abtool " + strings.Join(quoteArgs(os.Args[1:]), " ")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, os.Stdout, os.Stderr); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted: %w", err)
		}
		fmt.Fprintf(os.Stderr, "abtool: %v\n", err)
		os.Exit(1)
	}
}

// run checks out and builds both revisions, alternates their runs and
// writes the report to out; progress goes to log. It returns when every
// run has ended and the worktrees are removed; cancelling ctx kills the
// run in progress and returns its error.
func run(ctx context.Context, c config, out, log io.Writer) error {
	if err := c.validate(); err != nil {
		return err
	}
	repo, err := openRepository(ctx, c.Dir)
	if err != nil {
		return err
	}
	a, err := repo.resolve(ctx, "A", c.A)
	if err != nil {
		return err
	}
	b, err := repo.resolve(ctx, "B", c.B)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "abtool-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, rev := range []*revision{&a, &b} {
		remove, err := repo.checkout(ctx, rev, tmp)
		if err != nil {
			return err
		}
		defer remove()
		fmt.Fprintf(log, "abtool: building %s of %s at %s (%s)\n", c.Pkg, rev.Side, rev.Name, rev.Short)
		if err := repo.build(ctx, rev, c.Pkg, c.Tags, tmp); err != nil {
			return err
		}
	}

	m := machineNow()
	runs := map[string]*samples{"A": newSamples(), "B": newSamples()}
	raw := map[string]*strings.Builder{"A": {}, "B": {}}
	args := benchArgs(c)
	for round := 1; round <= c.Rounds; round++ {
		for _, rev := range []*revision{&a, &b} {
			var echo io.Writer
			if c.Verbose {
				echo = log
			}
			r, err := runOnce(ctx, rev, args, echo)
			if err != nil {
				return fmt.Errorf("round %d of %d, %s: %w", round, c.Rounds, rev.Side, err)
			}
			runs[rev.Side].addRun(r, c.fixedIterations())
			raw[rev.Side].Write(r.Output)
			fmt.Fprintf(log, "abtool: round %d/%d %s (%s): result lines %d, %.1f s, %.2f s CPU\n",
				round, c.Rounds, rev.Side, rev.Short, len(r.Results), r.Wall.Seconds(), r.CPU.Seconds())
		}
	}
	m.LoadEnd = loadAverage()

	if c.Raw != "" {
		if err := os.MkdirAll(c.Raw, 0o755); err != nil {
			return fmt.Errorf("-raw: %w", err)
		}
		for side, text := range raw {
			if err := os.WriteFile(filepath.Join(c.Raw, strings.ToLower(side)+".txt"), []byte(text.String()), 0o644); err != nil {
				return fmt.Errorf("-raw: %w", err)
			}
		}
	}
	_, err = io.WriteString(out, report(c, a, b, m, runs["A"], runs["B"]))
	return err
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, "^$|()*?[]{}\\ '\"&;<>") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return out
}
