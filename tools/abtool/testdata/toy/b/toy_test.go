package toy

import (
	"os"
	"strconv"
	"testing"
)

var sink []int

// BenchmarkWidgets reports two figures the A/B tool's test can assert on
// without timing: widgets/op, which differs between the commits (10, 20),
// and run/op, the number of this run in the package directory (1, 2, 3 on
// each side: the same spread on both, and proof that every run of a side
// ran in that side's own directory).
func BenchmarkWidgets(b *testing.B) {
	n := 0
	for range b.N {
		sink = Widgets()
		n = len(sink)
	}
	b.ReportMetric(float64(n), "widgets/op")
	b.ReportMetric(float64(countRun(b)), "run/op")
}

// countRun counts the runs of this benchmark in the working directory, in
// the file runs: once per process, however often the benchmark is called
// while the testing package calibrates b.N.
func countRun(b *testing.B) int {
	if counted != 0 {
		return counted
	}
	data, _ := os.ReadFile("runs")
	n, _ := strconv.Atoi(string(data))
	n++
	if err := os.WriteFile("runs", []byte(strconv.Itoa(n)), 0o644); err != nil {
		b.Fatal(err)
	}
	counted = n
	return n
}

var counted int
