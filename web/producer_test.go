package web

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/metrics"
	"github.com/drover-dev/drover/queue"
	"github.com/redis/go-redis/v9"
)

// counters is a metrics.Recorder that keeps the counters.
type counters struct {
	mu sync.Mutex
	m  map[string]float32 // name{label=value,…} → total
}

func (c *counters) IncrCounter(name string, v float32, labels ...metrics.Label) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range labels {
		name += fmt.Sprintf(",%s=%s", l.Name, l.Value)
	}
	c.m[name] += v
}
func (c *counters) SetGauge(string, float32, ...metrics.Label)  {}
func (c *counters) AddSample(string, float32, ...metrics.Label) {}

func (c *counters) get(key string) float32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key]
}

// commandCalls reads INFO commandstats: calls per command, INFO, CONFIG
// and clientCommands' own (MONITOR, its end marker's ECHO and handshake)
// left out.
func commandCalls(t *testing.T, rdb *redis.Client) map[string]int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		var calls int
		if _, err := fmt.Sscanf(rest, "calls=%d", &calls); err != nil || name == "info" || strings.HasPrefix(name, "config") ||
			name == "monitor" || name == "echo" || name == "hello" || strings.HasPrefix(name, "client") { // the MONITOR's and its end marker's
			continue
		}
		have[name] = calls
	}
	return have
}

// clientCommands runs run while a MONITOR of the server at addr watches,
// and returns the commands clients sent (by name, lower case), leaving
// out those scripts called (MONITOR shows them as "[0 lua]") and a new
// connection's handshake (HELLO, CLIENT SETINFO: the end marker's client).
func clientCommands(t *testing.T, addr string, run func()) map[string]int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rd := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
		t.Fatalf("MONITOR: %q, %v", line, err)
	}
	run()
	end := "end-of-" + t.Name()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	if err := rdb.Echo(context.Background(), end).Err(); err != nil {
		t.Fatal(err)
	}
	have := map[string]int{}
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("MONITOR: %v", err)
		}
		_, rest, ok := strings.Cut(line, "] \"")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, "\"")
		name = strings.ToLower(name)
		if name == "echo" && strings.Contains(rest, end) {
			return have
		}
		if !strings.Contains(line, "[0 lua]") && name != "hello" && name != "client" {
			have[name]++
		}
	}
}

// An HTTP enqueue to a queue Redis knows costs Redis one command, the
// enqueue script (EVALSHA), whose own commands include the registry's
// check: no SISMEMBER of its own, no audit write. Producer requests are
// counted in metrics instead (issue 42). Counted on a private server by
// INFO commandstats, which counts the commands scripts call beside the
// scripts.
func TestHTTPEnqueueOfAKnownQueueIsOneCommand(t *testing.T) {
	ctx := context.Background()
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rec := &counters{m: map[string]float32{}}
	r := newRigOn(t, testenv.ZooKeeper(t).Addrs, queue.ClientOptions{Addrs: []string{srv.Addr}}, Config{Metrics: rec})
	r.queueWith("known", 0)
	r.withJobs(0)
	r.want(201, "producer", "POST", "/api/v1/queues/known/jobs", `{"task":"t"}`) // lists the queue, loads the script
	r.want(201, "producer", "POST", "/api/v1/queues/known/jobs", `{"task":"t"}`)

	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const n = 20
	sent := clientCommands(t, srv.Addr, func() {
		for i := range n {
			r.want(201, "producer", "POST", "/api/v1/queues/known/jobs", fmt.Sprintf(`{"task":"t","id":"j%d"}`, i))
		}
	})
	if len(sent) != 1 || sent["evalsha"] != n {
		t.Errorf("want %d commands sent for %d enqueues, all EVALSHA, have %v", n, n, sent)
	}
	have := commandCalls(t, rdb)
	if have["evalsha"] != n {
		t.Errorf("want %d EVALSHA for %d enqueues (one command each), have %d (all: %v)", n, n, have["evalsha"], have)
	}
	// Everything else ran inside the script: the registry's check (one
	// SISMEMBER each) and the enqueue's own commands.
	inside := map[string]bool{"sismember": true, "time": true, "mget": true, "zrange": true, "zrem": true, "zscore": true,
		"hsetnx": true, "zadd": true, "set": true, "publish": true}
	for name, calls := range have {
		if name != "evalsha" && !inside[name] {
			t.Errorf("want no command outside the enqueue script, have %s ×%d (all: %v)", name, calls, have)
		}
	}
	if have["sismember"] != n {
		t.Errorf("want the registry's check inside each script (%d SISMEMBER), have %d", n, have["sismember"])
	}

	// Not audited: counted and the messages counted.
	if recs, err := r.store.Operator().Audit(ctx, 0, 100); err != nil || len(recs) != 0 {
		t.Errorf("want no audit record of producer requests, have %d, %v", len(recs), err)
	}
	if c := rec.get(metrics.ProducerRequests + ",action=job.enqueue,status=201"); c != n+2 {
		t.Errorf("want %d producer requests counted with status 201, have %v (all: %v)", n+2, c, rec.m)
	}
	if c := rec.get(metrics.EnqueuedTotal + ",queue=known"); c != n+2 {
		t.Errorf("want %d messages counted, have %v", n+2, c)
	}
	r.want(404, "producer", "POST", "/api/v1/queues/nosuch/jobs", `{"task":"t"}`)
	if c := rec.get(metrics.ProducerRequests + ",action=job.enqueue,status=404"); c != 1 {
		t.Errorf("want the 404 counted, have %v", c)
	}
}

// The HTTP producer accepts exactly the queues ops.KnownQueue knows: a
// family's key before its first enqueue, a configured queue never
// enqueued to, and not an unknown name (404, nothing written).
func TestHTTPProducerAnswersAsKnownQueue(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.withJobs(0)
	if err := r.zk.Families().Create(ctx, drover.FamilyConfig{Name: "cust", Prefix: "cust-",
		Queue: drover.QueueConfig{Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}}); err != nil {
		t.Fatal(err)
	}
	if err := r.zk.Queues().Create(ctx, drover.QueueConfig{Name: "configured", Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		queue  string
		status int
	}{{"cust-1", 201}, {"configured", 201}, {"nosuch", 404}} {
		known := ops.KnownQueue(ctx, r.store.Inspector(), r.zk.Queues(), c.queue)
		if (known == nil) != (c.status == 201) {
			t.Fatalf("%s: KnownQueue says %v, the test wants %d", c.queue, known, c.status)
		}
		r.want(c.status, "producer", "POST", "/api/v1/queues/"+c.queue+"/jobs", `{"task":"t"}`)
		listed, err := r.store.Inspector().QueueKnown(ctx, c.queue)
		if err != nil || listed != (c.status == 201) {
			t.Fatalf("%s: want listed %t after the enqueue, have %t, %v", c.queue, c.status == 201, listed, err)
		}
	}
}

// A family's max_queues: HTTP enqueues that would bring a key beyond it
// are refused with 409 naming the limit and write nothing; its keys take
// messages meanwhile; retiring one frees room (issue 41).
func TestHTTPProducerFamilyBound(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.withJobs(0)
	if err := r.zk.Families().Create(ctx, drover.FamilyConfig{Name: "cust", Prefix: "cust-", MaxQueues: 2,
		Queue: drover.QueueConfig{Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}}); err != nil {
		t.Fatal(err)
	}
	r.want(201, "producer", "POST", "/api/v1/queues/cust-1/jobs", `{"task":"t"}`)
	r.want(201, "producer", "POST", "/api/v1/queues/cust-2/jobs", `{"task":"t"}`)
	b := r.want(409, "producer", "POST", "/api/v1/queues/cust-3/jobs", `{"jobs":[{"task":"t"},{"task":"t","id":"x"}]}`)
	if !strings.Contains(b, "max_queues") || !strings.Contains(b, "2") || !strings.Contains(b, "cust") {
		t.Fatalf("want the refusal to name the family and its max_queues (2), have %s", b)
	}
	if listed, _ := r.store.Inspector().QueueKnown(ctx, "cust-3"); listed {
		t.Fatal("refused key: want it unlisted")
	}
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t).Addr})
	t.Cleanup(func() { rdb.Close() })
	if keys, _ := rdb.Keys(ctx, r.store.Prefix()+":{cust-3}:*").Result(); len(keys) > 0 {
		t.Fatalf("refused key: want nothing written, have %v", keys)
	}
	if st := r.jobStatus("viewer", "cust-3", "x"); st.State != drover.JobUnknown {
		t.Fatalf("refused job: want unknown, have %+v", st)
	}
	r.want(201, "producer", "POST", "/api/v1/queues/cust-1/jobs", `{"task":"t"}`) // a key it holds

	// cust-2's job ran and was trimmed, and its id's dedupe window
	// ended: only its :seq (and :family) are left.
	fam := r.store.Families()
	if n, err := fam.FamilyQueues(ctx, "cust"); err != nil || n != 2 {
		t.Fatalf("want the family's count 2, have %d, %v", n, err)
	}
	base := r.store.Prefix() + ":{cust-2}:"
	if err := rdb.Del(ctx, base+"log", base+"msg", base+"seen").Err(); err != nil {
		t.Fatal(err)
	}
	st, err := fam.Retire(ctx, "cust-2", time.Now().Add(time.Hour))
	if err != nil || st != queue.QueueIdle {
		t.Fatalf("retire cust-2: want idle, have %v, %v", st, err)
	}
	if keys, _ := rdb.Keys(ctx, base+"*").Result(); len(keys) > 0 {
		t.Fatalf("retired: want no key of cust-2 left, have %v", keys)
	}
	r.want(201, "producer", "POST", "/api/v1/queues/cust-3/jobs", `{"task":"t"}`)
	if n, _ := fam.FamilyQueues(ctx, "cust"); n != 2 {
		t.Fatalf("after a retire and a new key: want the count 2, have %d", n)
	}
}
