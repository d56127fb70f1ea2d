package main

import (
	"reflect"
	"testing"
)

func TestParseResults(t *testing.T) {
	out := []byte(`goos: linux
goarch: amd64
pkg: github.com/drover-dev/drover/queue
cpu: AMD EPYC
BenchmarkEnqueue/goroutines=1-2         	   10000	    105123 ns/op	      9512 msgs/s	        41.00 client-µs/msg	        12.50 redis-µs/msg	      1.000 msgs/flush	    1534 B/op	      28 allocs/op
BenchmarkLogs-2   	      10	     10553 ns/op	         3.000 widgets/op	     153 B/op	       1 allocs/op
--- BENCH: BenchmarkLogs-2
    p_test.go:6: hello from the benchmark
BenchmarkFails-2	--- FAIL: BenchmarkFails-2
BenchmarkOdd-2   	      10	     10553 ns/op	         3.000
BenchmarkNoIterations-2   	      0	     10553 ns/op
Benchmarking is not a result line	1	2 ns/op
BenchmarkX 	 5	 1e+06 ns/op
Benchmark 	 5	 7 ns/op
PASS
ok  	github.com/drover-dev/drover/queue	12.3s
`)
	want := []result{
		{Name: "BenchmarkEnqueue/goroutines=1", N: 10000, Metrics: []metric{
			{"ns/op", 105123}, {"msgs/s", 9512}, {"client-µs/msg", 41}, {"redis-µs/msg", 12.5},
			{"msgs/flush", 1}, {"B/op", 1534}, {"allocs/op", 28}}},
		{Name: "BenchmarkLogs", N: 10, Metrics: []metric{{"ns/op", 10553}, {"widgets/op", 3}, {"B/op", 153}, {"allocs/op", 1}}},
		{Name: "BenchmarkX", N: 5, Metrics: []metric{{"ns/op", 1e6}}},
		{Name: "Benchmark", N: 5, Metrics: []metric{{"ns/op", 7}}},
	}
	have := parseResults(out)
	if !reflect.DeepEqual(have, want) {
		t.Fatalf("parseResults:\nwant %+v\nhave %+v", want, have)
	}
}

func TestParseLineKeepsSubBenchmarkNumbers(t *testing.T) {
	// Only the last -N is GOMAXPROCS; a -8 inside a sub-benchmark's name
	// is part of the name.
	r, ok := parseLine("BenchmarkX/size-8-2 \t 3 \t 4.5 ns/op")
	if !ok || r.Name != "BenchmarkX/size-8" {
		t.Fatalf("want BenchmarkX/size-8, have %q (ok=%v)", r.Name, ok)
	}
}
