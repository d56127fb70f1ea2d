// Package testenv gives tests real Redis and ZooKeeper servers.
//
// Order of preference (DESIGN.md §9):
//
//  1. addresses from the environment: DROVER_TEST_REDIS (host:port),
//     DROVER_TEST_REDIS_CLUSTER (comma-separated masters), DROVER_TEST_ZK and
//     DROVER_TEST_ZK_ENSEMBLE (comma-separated host:port);
//  2. private servers started from the binaries installed on the machine
//     (Debian's redis-server and zookeeper packages) on free loopback ports in
//     temporary directories;
//  3. a Docker engine, through dockertest, when one answers.
//
// When none is available the test fails with a message saying how to install
// the servers. It never skips.
//
// Shared servers (Redis, RedisCluster, ZooKeeper, ZKEnsemble) are started on
// first use and live for the whole test binary; isolate tests with Prefix (a
// Redis key prefix) and Chroot (a ZooKeeper root path). Private servers
// (NewRedis, NewZooKeeper, NewZKEnsemble) belong to one test and are stopped
// when it ends; use them for fault injection (Stop, Start, Pause, Resume,
// Kill). Call Run from TestMain so that every server is stopped when the tests
// end; server processes also carry a parent-death signal, so they die with
// the test binary even when it panics on a timeout.
package testenv
