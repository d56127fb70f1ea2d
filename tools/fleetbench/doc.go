// Package fleetbench measures what a fleet of real `drover worker` processes
// costs at rest and under load (the "Fleet runtime" section of `make bench`,
// docs/benchmarks.md): idle Redis commands, CPU, RSS and goroutines with
// 100,000 empty queues, and enqueue-to-start latency, ZooKeeper writes and
// Pub/Sub deliveries with 10,000 busy ones.
//
// The benchmark itself is BenchmarkFleetRuntime (fleet_bench_test.go). This
// package holds the instruments it needs that a worker or the harness runs:
// a latency histogram that the bench-only handlers of the drover binary
// (cmd/drover, build tag droverbench) fill and publish to a file, and
// readers of a process's CPU time and resident memory from /proc. The
// ZooKeeper proxy that counts one member's requests by kind is
// internal/testing/proxy's (proxy.CountZooKeeper).
package fleetbench
