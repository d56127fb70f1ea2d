package main

import (
	"testing"

	"github.com/drover-dev/drover/internal/testing/testenv"
)

// TestPythonEnqueueCostAndOrder runs python/tests/test_enqueue_cost.py
// on a private Redis, which nothing else uses while it runs (INFO
// commandstats counts every client's commands): a lone enqueue with a
// generated id is one enqueue-one call of five commands, a batch over 200
// queues one enqueue-spread call with a PUBLISH per owner, and positions
// strictly increase per queue across every kind of call. It also runs the
// client's pure unit tests (python/test_drover_units.py: the plan of
// script calls, the estimate of Redis's clock).
func TestPythonEnqueueCostAndOrder(t *testing.T) {
	quiet := testenv.NewRedis(t, testenv.RedisOptions{})
	runPythonSuite(t, "test_drover_units")
	runPythonSuite(t, "tests.test_enqueue_cost",
		"DROVER_QUIET_REDIS_URL=redis://"+quiet.Addr+"/0", "DROVER_PREFIX="+testenv.Prefix(t))
}
