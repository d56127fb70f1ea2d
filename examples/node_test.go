package examples_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// nodeKeysInCI is how many family keys the Node suite enqueues to (three
// messages each); DROVER_NODE_KEYS overrides it (10000 for the issue's
// full count).
const nodeKeysInCI = "10000"

var (
	nodeBuildOnce sync.Once
	nodeBuildErr  error
)

// nodeClient returns node and the Node client's directory after building
// its dist/ with the locked TypeScript (tsc from node_modules: `npm ci`
// installed it, as `make deps` does). A missing node or node_modules fails
// the test with the install hint.
func nodeClient(t *testing.T) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed for the Node client's suite: apt-get install -y nodejs npm (or make deps): %v", err)
	}
	dir, err = filepath.Abs(filepath.Join("..", "clients", "node"))
	if err != nil {
		t.Fatal(err)
	}
	tsc := filepath.Join(dir, "node_modules", "typescript", "bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		t.Fatalf("the Node client's dependencies are not installed: (cd clients/node && npm ci), or make deps: %v", err)
	}
	nodeBuildOnce.Do(func() {
		cmd := exec.Command(node, tsc, "-p", ".")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			nodeBuildErr = err
			t.Logf("tsc:\n%s", out)
		}
	})
	if nodeBuildErr != nil {
		t.Fatalf("build the Node client (tsc): %v", nodeBuildErr)
	}
	return node, dir
}

// TestNodeClientAgainstAFleet runs the Node client's suite
// (clients/node/test, node's own test runner) against a real fleet:
// validation refusals with nothing written, the pool protocol, enqueue one
// and many, dedupe, delay, status through pending, delayed, retrying,
// succeeded, dead and revoked, schedules, the layout check, the HTTP
// producer, an ordered family whose keys each run their messages once
// and in order — every handler a pooled Node child (fleet_tasks.mjs) —
// and, on a Redis of its own, what an enqueue costs Redis (commands
// counted) and the order the lone enqueue scripts keep. A failing Node
// test fails this test. Then the client's examples run:
// enqueue.mjs follows a job that examples/handlers.mjs serves.
func TestNodeClientAgainstAFleet(t *testing.T) {
	node, dir := nodeClient(t)
	f := newFleet(t)
	done := filepath.Join(f.dir, "done")
	route := drover.TaskRoute{Command: []string{node, filepath.Join(dir, "test", "fleet_tasks.mjs")},
		Env: map[string]string{"DONE_FILE": done}, Pool: &drover.PoolConfig{MaxTasksPerChild: 10000}}
	// A backoff of an hour keeps a retry visible as "retrying".
	qc := drover.QueueConfig{Name: "node", MaxAttempts: 3, Concurrency: 4,
		Backoff: drover.Backoff{Base: drover.Duration(time.Hour), Max: drover.Duration(time.Hour)},
		Tasks:   map[string]drover.TaskRoute{"*": route}}
	if err := f.zk.Queues().Create(context.Background(), qc); err != nil {
		t.Fatalf("create queue node: %v", err)
	}
	fam := drover.FamilyConfig{Name: "node-keys", Prefix: "nk-",
		Queue: drover.QueueConfig{Ordered: true, Tasks: map[string]drover.TaskRoute{"*": route}}}
	if err := f.zk.Families().Create(context.Background(), fam); err != nil {
		t.Fatal(err)
	}
	// The client's examples: handlers.mjs serves a pooled queue, enqueue.mjs follows a job on it.
	example := drover.QueueConfig{Name: "node-example", Tasks: map[string]drover.TaskRoute{"resize": {
		Command: []string{node, filepath.Join(dir, "examples", "handlers.mjs")}, Pool: &drover.PoolConfig{}}}}
	if err := f.zk.Queues().Create(context.Background(), example); err != nil {
		t.Fatalf("create queue node-example: %v", err)
	}
	f.start("worker-1", []string{"worker"})
	f.start("scheduler-1", []string{"scheduler"})
	url, token := f.startWeb()

	durableMaster, durableReplica := replicatedPair(t)
	// A Redis of its own for enqueue_cost.test.js: INFO commandstats counts
	// every client's commands, and the fleet's Redis has a fleet on it.
	countRedis := testenv.NewRedis(t, testenv.RedisOptions{})

	keys := os.Getenv("DROVER_NODE_KEYS")
	if keys == "" {
		keys = nodeKeysInCI
	}
	cmd := exec.Command(node, "--test", "--test-reporter=spec",
		"test/validation.test.js", "test/pool.test.js", "test/enqueue_lone.test.js", "test/fleet.test.js",
		"test/enqueue_cost.test.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REDIS_URL=redis://"+f.redis+"/0", "DROVER_PREFIX="+f.prefix,
		"DROVER_QUEUE=node", "DROVER_FAMILY_PREFIX=nk-", "NODE_FLEET_KEYS="+keys,
		"DONE_FILE="+done, "DROVER_URL="+url, "DROVER_TOKEN="+token,
		"DURABLE_MASTER_URL=redis://"+durableMaster+"/0", "DURABLE_REPLICA_URL=redis://"+durableReplica+"/0",
		"COUNT_REDIS_URL=redis://"+countRedis.Addr+"/0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Node suite failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ℹ fail 0") {
		t.Fatalf("the Node suite did not report its passes:\n%s", out)
	}
	t.Logf("%s", out)

	ex := exec.Command(node, "examples/enqueue.mjs", "node-example", "resize", `{"path":"a.png","width":200}`)
	ex.Dir = dir
	ex.Env = append(os.Environ(), "REDIS_URL=redis://"+f.redis+"/0", "DROVER_PREFIX="+f.prefix)
	if out, err := ex.CombinedOutput(); err != nil || !strings.HasSuffix(string(out), "succeeded\n") {
		t.Fatalf("examples/enqueue.mjs with examples/handlers.mjs: want it to end succeeded, have %v:\n%s", err, out)
	}
}

// replicatedPair starts a private master and a replica of it (for the
// durable mode's tests: the fleet's Redis has no replica) and returns
// their addresses once the master sees the replica online.
func replicatedPair(t *testing.T) (master, replica string) {
	t.Helper()
	ctx := context.Background()
	m, r := testenv.NewRedis(t, testenv.RedisOptions{}), testenv.NewRedis(t, testenv.RedisOptions{})
	host, port, _ := strings.Cut(m.Addr, ":")
	if err := testenv.NewRedisProbe(t, r.Addr).Client().SlaveOf(ctx, host, port).Err(); err != nil {
		t.Fatalf("REPLICAOF %s: %v", m.Addr, err)
	}
	probe := testenv.NewRedisProbe(t, m.Addr)
	for deadline := time.Now().Add(60 * time.Second); ; {
		info, err := probe.Info(ctx, "replication")
		if err == nil && strings.Contains(info, "state=online") {
			return m.Addr, r.Addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not online at %s after 60s: %v", r.Addr, m.Addr, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not a delay
	}
}
