package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// machine is what the report says about where the runs were made.
type machine struct {
	Cores     int
	Model     string
	Go        string
	LoadStart string
	LoadEnd   string
}

func machineNow() machine {
	m := machine{Cores: runtime.NumCPU(), Model: "unknown CPU", Go: runtime.Version(), LoadStart: loadAverage()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.Model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return m
}

// loadAverage is the 1, 5 and 15 minute load averages, or "unknown".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// report renders the comparison as Markdown, to be pasted beside a figure
// in BENCHMARKS.md: the command, both revisions, the machine and its load,
// then one row per benchmark and unit, A's order first.
func report(c config, a, b revision, m machine, sa, sb *samples) string {
	var w strings.Builder
	fmt.Fprintf(&w, "#### A/B: `%s` in `%s`\n\n", c.Bench, c.Pkg)
	fmt.Fprintf(&w, "    %s\n\n", c.Cmdline)
	fmt.Fprintf(&w, "* A: %s; B: %s\n", revisionText(a), revisionText(b))
	benchtime := c.Benchtime
	if benchtime == "" {
		benchtime = "default (1s)"
	}
	fmt.Fprintf(&w, "* %d rounds, alternated A, B; each run a fresh process of the test binary (benchtime %s, count %d, benchmem)\n", c.Rounds, benchtime, c.Count)
	fmt.Fprintf(&w, "* Machine: %d cores (%s), %s; load average %s at the start, %s at the end\n", m.Cores, m.Model, m.Go, m.LoadStart, m.LoadEnd)
	n := c.Rounds * c.Count
	fmt.Fprintf(&w, "* Each cell: median (min – max) of %d values. A verdict needs disjoint spreads, which %d values a side from one distribution give by chance %s; overlapping spreads are \"not measured\"\n\n",
		n, n, chanceText(chanceOfDisjoint(n, n)))

	w.WriteString("| benchmark | unit | A | B | B/A | verdict |\n|---|---|---|---|---|---|\n")
	for _, name := range mergedNames(sa, sb) {
		for _, unit := range mergedUnits(name, sa, sb) {
			cmp := compare(sa.values[name][unit], sb.values[name][unit])
			fmt.Fprintf(&w, "| %s | %s | %s | %s | %s | %s |\n",
				name, unit, cell(cmp.A), cell(cmp.B), ratioCell(cmp.Ratio), cmp.Verdict)
		}
	}
	w.WriteString("\n")
	fmt.Fprintf(&w, "`%s` is the run's CPU time (user + system of the test process and of the servers it started and waited for) over its iterations: it includes the process's start, the set-up and the calibration runs, so it is an upper bound that both sides share.", cpuPerOp)
	if sa.SharedCPU+sb.SharedCPU > 0 {
		fmt.Fprintf(&w, " Runs that print more than one benchmark share one process's CPU, which is not divided among them: narrow -bench to one benchmark (`'^BenchmarkEnqueue$/goroutines=1$'`) for its `%s`.", cpuPerOp)
	}
	if sa.values[wholeRun] != nil || sb.values[wholeRun] != nil {
		fmt.Fprintf(&w, " `%s` `cpu-s` is each run's whole CPU time: with -benchtime %s both sides do the same iterations.", wholeRun, c.Benchtime)
	}
	w.WriteString("\n")
	return w.String()
}

// revisionText names a side's commit: its short hash and subject, after
// the name it was given when that was not a hash.
func revisionText(r revision) string {
	if strings.HasPrefix(r.Hash, r.Name) {
		return fmt.Sprintf("%s (%s)", r.Short, r.Subject)
	}
	return fmt.Sprintf("`%s` = %s (%s)", r.Name, r.Short, r.Subject)
}

// mergedNames lists A's benchmarks in order, then those only B ran.
func mergedNames(sa, sb *samples) []string {
	names := append([]string(nil), sa.names...)
	for _, n := range sb.names {
		if sa.values[n] == nil {
			names = append(names, n)
		}
	}
	return names
}

func mergedUnits(name string, sa, sb *samples) []string {
	units := append([]string(nil), sa.units[name]...)
	for _, u := range sb.units[name] {
		if _, ok := sa.values[name][u]; !ok {
			units = append(units, u)
		}
	}
	return units
}

func cell(s summary) string {
	if s.N == 0 {
		return "—"
	}
	return fmt.Sprintf("%s (%s – %s)", number(s.Median), number(s.Min), number(s.Max))
}

func ratioCell(r float64) string {
	if math.IsNaN(r) {
		return "—"
	}
	return strconv.FormatFloat(r, 'f', 3, 64)
}

func chanceText(p float64) string {
	if p >= 1 {
		return "always"
	}
	return fmt.Sprintf("1 time in %.0f", 1/p)
}

// number prints about four significant digits, with thousands separated
// by commas as BENCHMARKS.md writes them.
func number(v float64) string {
	a := math.Abs(v)
	var s string
	switch {
	case a >= 1000:
		s = strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1 || a == 0:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	default:
		s = strconv.FormatFloat(v, 'g', 3, 64)
	}
	return groupThousands(s)
}

func groupThousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, dot := strings.Cut(s, ".")
	if strings.ContainsAny(whole, "e") || len(whole) <= 3 {
		return sign + s
	}
	var b strings.Builder
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if dot {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}
