package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCompare(t *testing.T) {
	for _, c := range []struct {
		name     string
		a, b     []float64
		measured bool
		verdict  string // a prefix
		ratio    float64
	}{
		{"overlapping spreads", []float64{100, 110, 120}, []float64{90, 105, 115}, false, "not measured (spreads overlap)", 1.05 / 1.10},
		{"touching spreads overlap", []float64{100, 110, 120}, []float64{120, 130, 140}, false, "not measured (spreads overlap)", 130.0 / 110},
		{"one side inside the other", []float64{50, 100, 200}, []float64{99, 100, 101}, false, "not measured", 1},
		{"disjoint, B lower", []float64{100, 110, 120}, []float64{80, 85, 90}, true, "B lower by 22.7%", 85.0 / 110},
		{"disjoint, B higher", []float64{10, 10, 10}, []float64{20, 20, 20}, true, "B higher by 100.0%", 2},
		{"disjoint from zero", []float64{0, 0, 0}, []float64{1, 1, 1}, true, "B higher (spreads disjoint)", math.NaN()},
		{"even count median", []float64{1, 2, 3, 4}, []float64{10, 11, 12, 13}, true, "B higher", 11.5 / 2.5},
		{"the same constant", []float64{28, 28, 28}, []float64{28, 28, 28}, false, "same", 1},
		{"too few values to judge", []float64{100, 101}, []float64{200, 201}, false, "not measured (fewer than 3", 200.5 / 100.5},
		{"one round each", []float64{100}, []float64{200}, false, "not measured (fewer than 3", 2},
		{"only in A", []float64{1, 2, 3}, nil, false, "only in A", math.NaN()},
		{"only in B", nil, []float64{1, 2, 3}, false, "only in B", math.NaN()},
	} {
		t.Run(c.name, func(t *testing.T) {
			have := compare(c.a, c.b)
			if have.Measured != c.measured || !strings.HasPrefix(have.Verdict, c.verdict) {
				t.Errorf("want measured=%v verdict %q…, have measured=%v %q", c.measured, c.verdict, have.Measured, have.Verdict)
			}
			if math.IsNaN(c.ratio) != math.IsNaN(have.Ratio) || (!math.IsNaN(c.ratio) && math.Abs(have.Ratio-c.ratio) > 1e-9) {
				t.Errorf("ratio: want %v, have %v", c.ratio, have.Ratio)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	have := summarize([]float64{5, 1, 3})
	if want := (summary{N: 3, Median: 3, Min: 1, Max: 5}); have != want {
		t.Fatalf("want %+v, have %+v", want, have)
	}
}

func TestChanceOfDisjoint(t *testing.T) {
	for _, c := range []struct {
		n, m int
		want float64
	}{{1, 1, 1}, {2, 2, 1.0 / 3}, {3, 3, 1.0 / 10}, {5, 5, 1.0 / 126}, {3, 4, 2.0 / 35}} {
		if have := chanceOfDisjoint(c.n, c.m); math.Abs(have-c.want) > 1e-12 {
			t.Errorf("chanceOfDisjoint(%d, %d): want %v, have %v", c.n, c.m, c.want, have)
		}
	}
}

func TestNumber(t *testing.T) {
	for v, want := range map[float64]string{
		105123: "105,123", 9512.4: "9,512", 123.45: "123.5", 41: "41.00", 0: "0.00",
		0.01234: "0.0123", -1234567: "-1,234,567",
	} {
		if have := number(v); have != want {
			t.Errorf("number(%v): want %q, have %q", v, want, have)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := config{A: "HEAD~1", B: "HEAD", Bench: ".", Pkg: "./queue", Rounds: 3, Count: 1}
	if err := ok.validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		field string
		edit  func(*config)
	}{
		{"-a", func(c *config) { c.A = "" }},
		{"-b", func(c *config) { c.B = "" }},
		{"-bench", func(c *config) { c.Bench = "" }},
		{"-bench", func(c *config) { c.Bench = "Enqueue/(" }},
		{"-pkg", func(c *config) { c.Pkg = "" }},
		{"-rounds", func(c *config) { c.Rounds = 0 }},
		{"-count", func(c *config) { c.Count = 0 }},
		{"-benchtime", func(c *config) { c.Benchtime = "2" }},
		{"-benchtime", func(c *config) { c.Benchtime = "0x" }},
		{"-timeout", func(c *config) { c.Timeout = -1 }},
	} {
		bad := ok
		c.edit(&bad)
		if err := bad.validate(); err == nil || !strings.HasPrefix(err.Error(), c.field+":") {
			t.Errorf("want an error naming %s, have %v", c.field, err)
		}
	}
}

func TestAddRunDividesCPUOnlyWhenOneBenchmarkRan(t *testing.T) {
	one := runResult{CPU: 3 * time.Second, Results: []result{
		{Name: "BenchmarkA", N: 1000, Metrics: []metric{{"ns/op", 5}}},
		{Name: "BenchmarkA", N: 2000, Metrics: []metric{{"ns/op", 6}}}, // -count 2
	}}
	two := runResult{CPU: 4 * time.Second, Results: []result{
		{Name: "BenchmarkA", N: 1000, Metrics: []metric{{"ns/op", 5}}},
		{Name: "BenchmarkB", N: 1000, Metrics: []metric{{"ns/op", 7}}},
	}}
	s := newSamples()
	s.addRun(one, true)
	if have := s.values["BenchmarkA"][cpuPerOp]; len(have) != 1 || have[0] != 1e6 {
		t.Errorf("one benchmark, 3 s over 3,000 iterations: want %s [1e6], have %v", cpuPerOp, have)
	}
	if s.values[wholeRun] != nil {
		t.Errorf("one benchmark: want no %s row, have %v", wholeRun, s.values[wholeRun])
	}
	s.addRun(two, false)
	if have := s.values["BenchmarkB"][cpuPerOp]; have != nil || s.SharedCPU != 1 || s.values[wholeRun] != nil {
		t.Errorf("two benchmarks, time-based: want no CPU figure and one shared run, have %v, %d, %v", have, s.SharedCPU, s.values[wholeRun])
	}
	s.addRun(two, true)
	if have := s.values[wholeRun]["cpu-s"]; len(have) != 1 || have[0] != 4 {
		t.Errorf("two benchmarks, -benchtime Nx: want %s cpu-s [4], have %v", wholeRun, have)
	}
	if want := []float64{5, 6, 5, 5}; !slices.Equal(s.values["BenchmarkA"]["ns/op"], want) {
		t.Errorf("ns/op of BenchmarkA: want %v, have %v", want, s.values["BenchmarkA"]["ns/op"])
	}
}
