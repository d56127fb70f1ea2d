package main

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"strings"
)

// result is one line of the standard benchmark output
// (https://go.dev/design/14313-benchmark-format): the benchmark's name
// without the -GOMAXPROCS suffix, its iterations, and every value/unit pair
// on the line in order (ns/op, B/op, allocs/op and each b.ReportMetric).
type result struct {
	Name    string
	N       int64
	Metrics []metric
}

type metric struct {
	Unit  string
	Value float64
}

// nameSuffix is the -GOMAXPROCS suffix the testing package appends to a
// benchmark's name when GOMAXPROCS is not 1. Both sides run on the same
// machine with the same setting, so the suffix says nothing about either;
// tools/benchreport drops it the same way.
var nameSuffix = regexp.MustCompile(`-\d+$`)

// parseResults returns the result lines of a test binary's output, in the
// order they were printed. Every other line (the goos/goarch/cpu header,
// --- BENCH blocks with a benchmark's log, PASS) is skipped. A line that
// starts like a result but has no whole value/unit pairs is not a result:
// "BenchmarkX-2 --- FAIL" is not counted as a run with no metrics.
func parseResults(out []byte) []result {
	var rs []result
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if r, ok := parseLine(sc.Text()); ok {
			rs = append(rs, r)
		}
	}
	return rs
}

// parseLine parses one result line, reporting whether it is one. The
// format's rule: the name starts with "Benchmark" followed by end of word or
// a character that is not a lower-case letter, then the iteration count,
// then pairs of a number and a unit, all separated by white space.
func parseLine(line string) (result, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 || !isBenchmarkName(f[0]) {
		return result{}, false
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || n <= 0 {
		return result{}, false
	}
	r := result{Name: nameSuffix.ReplaceAllString(f[0], ""), N: n}
	for i := 2; i < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return result{}, false
		}
		r.Metrics = append(r.Metrics, metric{Unit: f[i+1], Value: v})
	}
	return r, true
}

func isBenchmarkName(s string) bool {
	rest, ok := strings.CutPrefix(s, "Benchmark")
	if !ok {
		return false
	}
	return rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z')
}
