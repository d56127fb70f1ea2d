package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

// replicated is a private master with one replica, both started by testenv
// (so the replica can be paused), the replica replicating through a proxy
// (link) that can cut the replication stream.
type replicated struct {
	master, replica       *testenv.RedisServer
	masterRDB, replicaRDB redis.UniversalClient
	link                  *testenv.Proxy
}

// newReplicated starts a master and a replica of it (REPLICAOF, through
// link) and returns once the master sees the replica online.
func newReplicated(t testing.TB) *replicated {
	t.Helper()
	ctx := context.Background()
	r := &replicated{
		master:  testenv.NewRedis(t, testenv.RedisOptions{}),
		replica: testenv.NewRedis(t, testenv.RedisOptions{}),
	}
	for _, c := range []struct {
		addr string
		rdb  *redis.UniversalClient
	}{{r.master.Addr, &r.masterRDB}, {r.replica.Addr, &r.replicaRDB}} {
		rdb, err := NewClient(ClientOptions{Addrs: []string{c.addr}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
		*c.rdb = rdb
	}
	r.link = testenv.NewProxy(t, r.master.Addr)
	host, port, _ := strings.Cut(r.link.Addr, ":")
	if err := r.replicaRDB.SlaveOf(ctx, host, port).Err(); err != nil {
		t.Fatalf("REPLICAOF %s: %v", r.master.Addr, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := r.masterRDB.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "state=online") {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not online at master %s after 30s: %s %v", r.replica.Addr, r.master.Addr, info, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not a delay
	}
}

// durableStore is a Store on the master requiring one replica's
// confirmation, and a plain one with the same prefix.
func durableStore(t *testing.T, r *replicated) (durable, plain *Store) {
	t.Helper()
	durable = newTestStore(t, r.masterRDB, func(c *Config) {
		c.Durable = Durable{Replicas: 1, Timeout: 200 * time.Millisecond}
	})
	plain = newTestStore(t, r.masterRDB, func(c *Config) { c.Prefix = durable.Prefix() })
	return durable, plain
}

// wantNotReplicated fails the test unless err is a NotReplicatedError
// wrapping drover.ErrOutcomeUnknown and naming ids.
func wantNotReplicated(t *testing.T, what string, err error, ids ...string) {
	t.Helper()
	var nr *NotReplicatedError
	if !errors.Is(err, drover.ErrOutcomeUnknown) || !errors.As(err, &nr) {
		t.Fatalf("%s: want a NotReplicatedError wrapping ErrOutcomeUnknown, have %v", what, err)
	}
	if !slices.Equal(nr.IDs, ids) {
		t.Fatalf("%s: want the ids %v named, have %v (%v)", what, ids, nr.IDs, err)
	}
}

// With the replica frozen, a durable enqueue is not acknowledged (outcome
// unknown, naming the id), where a plain one is; a retry while it is still
// frozen is not acknowledged either (the write is on the master, found as a
// duplicate, and still unconfirmed); once it is back, the retry is
// acknowledged, the replica holds the message, and the log holds it once.
func TestDurableEnqueueWaitsForTheReplica(t *testing.T) {
	ctx := context.Background()
	r := newReplicated(t)
	durable, plain := durableStore(t, r)
	p := durable.Producer()
	q := "durable"

	if res, err := p.Enqueue(ctx, msg(q, "a")); err != nil || res.Position == 0 {
		t.Fatalf("enqueue with the replica up: want a position, have %+v, %v", res, err)
	}
	if res, err := p.Enqueue(ctx, msg(q, "")); err != nil || res.Position == 0 {
		t.Fatalf("enqueue of a generated id with the replica up: want a position, have %+v, %v", res, err)
	}

	// Another producer (another process), whose connection's last write
	// was confirmed before the replica froze: WAIT there counts from that
	// write.
	other := newTestStore(t, testClient(t, ClientOptions{Addrs: []string{r.master.Addr}}), func(c *Config) {
		c.Prefix = durable.Prefix()
		c.Durable = Durable{Replicas: 1, Timeout: 200 * time.Millisecond}
	})
	if _, err := other.Producer().Enqueue(ctx, msg(q, "")); err != nil {
		t.Fatalf("enqueue by another producer with the replica up: %v", err)
	}

	r.replica.Pause(t)
	resumed := false
	defer func() {
		if !resumed {
			r.replica.Resume(t)
		}
	}()
	_, err := p.Enqueue(ctx, msg(q, "b"))
	wantNotReplicated(t, "enqueue with the replica frozen", err, "b")
	_, err = other.Producer().Enqueue(ctx, msg(q, "b"))
	wantNotReplicated(t, "retry from another client with the replica still frozen (a duplicate on the master)", err, "b")
	_, err = p.EnqueueBatch(ctx, []*drover.Message{msg(q, "c"), msg("durable-2", "d")})
	wantNotReplicated(t, "batch with the replica frozen", err, "c", "d")

	// Without the mode the same enqueue is acknowledged although only the
	// master has it: the window a failover loses.
	if res, err := plain.Producer().Enqueue(ctx, msg(q, "e")); err != nil || res.Position == 0 {
		t.Fatalf("plain enqueue with the replica frozen: want it acknowledged, have %+v, %v", res, err)
	}

	r.replica.Resume(t)
	resumed = true
	res, err := p.Enqueue(ctx, msg(q, "b"))
	if err != nil || !res.Duplicate {
		t.Fatalf("retry with the replica back: want an acknowledged duplicate, have %+v, %v", res, err)
	}
	if _, err := p.EnqueueBatch(ctx, []*drover.Message{msg(q, "c"), msg("durable-2", "d")}); err != nil {
		t.Fatalf("batch retry with the replica back: %v", err)
	}
	// Acknowledged means the replica has it.
	for _, id := range []string{"a", "b", "c"} {
		if ok, err := r.replicaRDB.HExists(ctx, durable.keys.queue(q).msg, id).Result(); err != nil || !ok {
			t.Fatalf("the replica after %s was acknowledged: want it in :msg, have %v, %v", id, ok, err)
		}
	}
	var ids []string
	for _, e := range readAll(t, durable, q, 0, 100) {
		ids = append(ids, e.ID)
	}
	for _, id := range []string{"a", "b", "c", "e"} {
		if n := countOf(ids, id); n != 1 {
			t.Fatalf("log of %s: want %s once, have %d times in %v", q, id, n, ids)
		}
	}
}

func countOf(ids []string, id string) int {
	n := 0
	for _, v := range ids {
		if v == id {
			n++
		}
	}
	return n
}

// AOF asks for WAITAOF; a server without it (before 7.2) fails the enqueue
// with an error saying so, before anything is written.
func TestDurableAOFNeedsWaitAOF(t *testing.T) {
	ctx := context.Background()
	r := newReplicated(t)
	s := newTestStore(t, r.masterRDB, func(c *Config) {
		c.Durable = Durable{Replicas: 1, Timeout: 200 * time.Millisecond, AOF: true}
	})
	info, err := r.masterRDB.Do(ctx, "COMMAND", "INFO", "WAITAOF").Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(info) > 0 && info[0] != nil {
		t.Skip("this Redis has WAITAOF (7.2+): the refusal is for older servers")
	}
	_, err = s.Producer().Enqueue(ctx, msg("aof", "a"))
	if !errors.Is(err, drover.ErrInvalidConfig) || !strings.Contains(err.Error(), "WAITAOF") {
		t.Fatalf("AOF on a server without WAITAOF: want ErrInvalidConfig naming WAITAOF, have %v", err)
	}
	if n, err := r.masterRDB.Exists(ctx, s.keys.queue("aof").msg).Result(); err != nil || n != 0 {
		t.Fatalf("AOF refused: want nothing written, have EXISTS %d, %v", n, err)
	}
}

// New refuses a durable mode it cannot honour, naming the field.
func TestDurableConfigValidation(t *testing.T) {
	plain, err := NewClient(ClientOptions{Addrs: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	cluster, err := NewClient(ClientOptions{Addrs: []string{"127.0.0.1:1"}, Cluster: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	readTimeout := plain.(*redis.Client).Options().ReadTimeout
	for _, tc := range []struct {
		name string
		rdb  redis.UniversalClient
		d    Durable
		want string // "" for valid
	}{
		{"off", plain, Durable{}, ""},
		{"on", plain, Durable{Replicas: 1, Timeout: 500 * time.Millisecond}, ""},
		{"no timeout", plain, Durable{Replicas: 1}, "Durable.Timeout is required"},
		{"negative", plain, Durable{Replicas: -1, Timeout: time.Second}, "Durable.Replicas -1"},
		{"timeout without replicas", plain, Durable{Timeout: time.Second}, "without replicas"},
		{"sub-millisecond", plain, Durable{Replicas: 1, Timeout: 1500 * time.Microsecond}, "whole milliseconds"},
		{"above the read timeout", plain, Durable{Replicas: 1, Timeout: readTimeout}, "read timeout"},
		{"cluster", cluster, Durable{Replicas: 1, Timeout: time.Second}, ""},
		{"cluster, above the read timeout", cluster, Durable{Replicas: 1, Timeout: readTimeout}, "read timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Client: tc.rdb, Durable: tc.d})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want valid, have %v", err)
			case tc.want != "" && (!errors.Is(err, drover.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want ErrInvalidConfig with %q, have %v", tc.want, err)
			}
		})
	}
}

// BenchmarkDurableEnqueue: Enqueue on a master with one replica (both on
// this machine), with the durable mode off and on (WAIT 1), from 1 and 8
// goroutines, in one run. Reports msgs/s and the mean latency of one
// Enqueue.
func BenchmarkDurableEnqueue(b *testing.B) {
	r := newReplicated(b)
	for _, mode := range []struct {
		name string
		d    Durable
	}{{"off", Durable{}}, {"wait1", Durable{Replicas: 1, Timeout: time.Second}}} {
		for _, g := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", mode.name, g), func(b *testing.B) {
				s, err := New(Config{Client: r.masterRDB, Prefix: testenv.Prefix(b), Durable: mode.d})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				var next atomic.Int64
				var spent atomic.Int64 // ns inside Enqueue, summed over goroutines
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for range g {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= int64(b.N) {
							t0 := time.Now()
							if _, err := s.Producer().Enqueue(ctx, benchMessage()); err != nil {
								b.Error(err)
								return
							}
							spent.Add(int64(time.Since(t0)))
						}
					}()
				}
				wg.Wait()
				el := time.Since(start)
				b.StopTimer()
				b.ReportMetric(float64(b.N)/el.Seconds(), "msgs/s")
				b.ReportMetric(float64(spent.Load())/float64(b.N)/1e3, "µs/enqueue")
				k := s.keys.queue("bench")
				r.masterRDB.Del(ctx, k.log, k.msg, k.seq, s.keys.queues())
			})
		}
	}
}

// In the durable mode the worker's retries and dead letters are confirmed
// like enqueues (the offset committed after them passes the message): with
// the replica frozen they return a NotReplicatedError (and the worker
// writes them again); with it back they succeed and the replica has them.
func TestDurableRetryAndDeadLetterWaitForTheReplica(t *testing.T) {
	ctx := context.Background()
	r := newReplicated(t)
	durable, _ := durableStore(t, r)
	q := "durable-worker"
	for _, id := range []string{"r", "d"} {
		mustEnqueue(t, durable, msg(q, id))
	}
	retry := func() error {
		m := msg(q, "r")
		m.Attempt = 1
		return durable.Log().Retry(ctx, m, time.Now().Add(time.Hour))
	}
	dead := func() error {
		return durable.Log().DeadLetter(ctx, q, drover.DeadLetter{Message: msg(q, "d"), Failure: drover.Failure{Reason: "boom"}})
	}

	r.replica.Pause(t)
	errRetry, errDead := retry(), dead()
	r.replica.Resume(t)
	wantNotReplicated(t, "retry with the replica frozen", errRetry, "r")
	wantNotReplicated(t, "dead letter with the replica frozen", errDead, "d")

	if err := retry(); err != nil {
		t.Fatalf("retry written again with the replica back: %v", err)
	}
	if err := dead(); err != nil {
		t.Fatalf("dead letter written again with the replica back: %v", err)
	}
	qk := durable.keys.queue(q)
	if _, err := r.replicaRDB.ZScore(ctx, qk.delayed, "r").Result(); err != nil {
		t.Fatalf("the replica after the retry was confirmed: want r in :delayed, have %v", err)
	}
	if _, err := r.replicaRDB.ZScore(ctx, qk.dead, "d").Result(); err != nil {
		t.Fatalf("the replica after the dead letter was confirmed: want d in :dead, have %v", err)
	}
}

// A Sentinel failover after the master died with a write only it had:
// without the mode that write was acknowledged and is gone from the new
// master; with it the same situation answered "outcome unknown", and the
// retry with the same id after the failover is unconfirmed until the new
// master has a replica, then lands exactly once. A message acknowledged in the durable mode
// before the fault is on the new master.
func TestDurableEnqueueSurvivesASentinelFailover(t *testing.T) {
	ctx := context.Background()
	sr := newSentinelled(t, "drover-durable")
	r, rdb := sr.replicated, sr.rdb
	durable := newTestStore(t, rdb, func(c *Config) {
		c.Durable = Durable{Replicas: 1, Timeout: 200 * time.Millisecond}
	})
	plain := newTestStore(t, rdb, func(c *Config) { c.Prefix = durable.Prefix() })
	q := "failover"
	mustEnqueue(t, durable, msg(q, "before"))

	// The replication stream stops reaching the replica (a frozen replica
	// would still receive it into its socket buffer), then the master dies.
	r.link.Blackhole()
	if _, err := plain.Producer().Enqueue(ctx, msg(q, "plain")); err != nil {
		t.Fatalf("plain enqueue with the replication cut: want acknowledged, have %v", err)
	}
	_, err := durable.Producer().Enqueue(ctx, msg(q, "durable"))
	wantNotReplicated(t, "durable enqueue with the replication cut", err, "durable")
	r.master.Kill(t)

	sr.waitPromoted(t)
	// The new master has no replica yet: the retry is still unconfirmed.
	waitFor(t, "the client reaches the new master", func() bool {
		_, err = durable.Producer().Enqueue(ctx, msg(q, "durable"))
		return errors.Is(err, drover.ErrOutcomeUnknown)
	})
	// A fresh replica of the new master.
	fresh := testenv.NewRedis(t, testenv.RedisOptions{})
	freshRDB := testClient(t, ClientOptions{Addrs: []string{fresh.Addr}})
	host, port, _ := strings.Cut(r.replica.Addr, ":")
	if err := freshRDB.SlaveOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the retry of the unknown outcome is confirmed", func() bool {
		_, err = durable.Producer().Enqueue(ctx, msg(q, "durable"))
		return err == nil // errors while the client finds the new master, or unconfirmed
	})
	var ids []string
	for _, e := range readAll(t, durable, q, 0, 100) {
		ids = append(ids, e.ID)
	}
	if !slices.Equal(ids, []string{"before", "durable"}) {
		t.Fatalf("the new master's log: want [before durable] (plain, acknowledged without the mode, lost), have %v", ids)
	}
}

// sentinelled is a replicated pair watched by one Sentinel that fails
// the master over a second after it stops answering, and a client that
// finds the master through it.
type sentinelled struct {
	*replicated
	name  string
	rdb   redis.UniversalClient
	probe *redis.SentinelClient
}

func newSentinelled(t *testing.T, name string) *sentinelled {
	t.Helper()
	r := newReplicated(t)
	sentinel := startSentinel(t, name, r.master.Addr,
		"sentinel down-after-milliseconds "+name+" 1000", "sentinel failover-timeout "+name+" 5000")
	probe := redis.NewSentinelClient(&redis.Options{Addr: sentinel})
	t.Cleanup(func() { _ = probe.Close() })
	return &sentinelled{replicated: r, name: name, probe: probe,
		rdb: testClient(t, ClientOptions{Addrs: []string{sentinel}, MasterName: name})}
}

// failover asks the Sentinel for a graceful failover once it has a
// replica to promote: it learns of the replica from the master's INFO,
// which it reads every 10 s, so right after the set-up it may answer
// NOGOODSLAVE (seen in a make test run on a loaded host).
func (s *sentinelled) failover(t *testing.T) {
	t.Helper()
	waitFor(t, "Sentinel accepts the failover", func() bool {
		err := s.probe.Failover(context.Background(), s.name).Err()
		if err != nil && !strings.Contains(err.Error(), "NOGOODSLAVE") {
			t.Fatalf("SENTINEL FAILOVER: %v", err)
		}
		return err == nil
	})
}

// waitPromoted waits until the Sentinel names the replica the master.
func (s *sentinelled) waitPromoted(t *testing.T) {
	t.Helper()
	_, replicaPort, _ := strings.Cut(s.replica.Addr, ":")
	waitFor(t, "Sentinel promotes the replica", func() bool {
		a, err := s.probe.GetMasterAddrByName(context.Background(), s.name).Result()
		return err == nil && len(a) == 2 && a[1] == replicaPort
	})
}

// waitFor polls cond until it holds, failing the test after 60s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, not a delay
	}
}

// clusterShards maps each master of c to its replica's client, and names
// for each master a queue whose slot it serves.
type clusterShard struct {
	master, replica string
	queue           string
}

func clusterShards(t *testing.T, c *testenv.ReplicatedCluster, rdb redis.UniversalClient) []clusterShard {
	t.Helper()
	ctx := context.Background()
	cc := rdb.(*redis.ClusterClient)
	var shards []clusterShard
	for _, n := range c.Nodes {
		info, err := testClient(t, ClientOptions{Addrs: []string{n.Addr}}).Info(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(info, "role:slave") {
			continue
		}
		var host, port string
		for _, l := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "master_host:"); ok {
				host = v
			}
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "master_port:"); ok {
				port = v
			}
		}
		sh := clusterShard{master: host + ":" + port, replica: n.Addr}
		for i := 0; sh.queue == ""; i++ {
			q := fmt.Sprintf("shard-%d", i)
			m, err := cc.MasterForKey(ctx, "{"+q+"}")
			if err != nil {
				t.Fatal(err)
			}
			if m.Options().Addr == sh.master {
				sh.queue = q
			}
		}
		shards = append(shards, sh)
	}
	if len(shards) != 3 {
		t.Fatalf("want 3 shards with a replica each, have %+v", shards)
	}
	return shards
}

// On a Redis Cluster the durable mode waits on each shard's master the
// enqueue went to: a batch over every shard is acknowledged once each
// shard's replica holds its messages; with one shard's replica frozen, the
// messages of that shard are "outcome unknown" (named) and the others, in
// the same batch, are acknowledged, as a worker's retry on that shard is
// not; once it thaws, the retry is.
func TestDurableEnqueueOnACluster(t *testing.T) {
	ctx := context.Background()
	c := testenv.NewRedisClusterWithReplicas(t)
	rdb := testClient(t, ClientOptions{Addrs: c.Addrs, Cluster: true})
	s := newTestStore(t, rdb, func(cfg *Config) { cfg.Durable = Durable{Replicas: 1, Timeout: 200 * time.Millisecond} })
	shards := clusterShards(t, c, rdb)

	var batch []*drover.Message
	for _, sh := range shards {
		batch = append(batch, msg(sh.queue, "all-"+sh.queue))
	}
	if _, err := s.Producer().EnqueueBatch(ctx, batch); err != nil {
		t.Fatalf("a batch over the three shards, replicas up: want acknowledged, have %v", err)
	}
	for _, sh := range shards {
		if ok, err := replicaHas(t, sh.replica, s.keys.queue(sh.queue).msg, "all-"+sh.queue); err != nil || !ok {
			t.Fatalf("acknowledged: want all-%s on the replica %s of its shard, have %v %v", sh.queue, sh.replica, ok, err)
		}
	}

	frozen := shards[0]
	var node *testenv.RedisServer
	for _, n := range c.Nodes {
		if n.Addr == frozen.replica {
			node = n
		}
	}
	node.Pause(t)
	defer node.Resume(t)
	batch = batch[:0]
	for _, sh := range shards {
		batch = append(batch, msg(sh.queue, "one-"+sh.queue))
	}
	_, err := s.Producer().EnqueueBatch(ctx, batch)
	// A worker's retry is confirmed by the shard of its queue too.
	m := msg(frozen.queue, "all-"+frozen.queue)
	m.Attempt = 1
	errRetry := s.Log().Retry(ctx, m, time.Now().Add(time.Hour))
	node.Resume(t)
	wantNotReplicated(t, "a batch with one shard's replica frozen", err, "one-"+frozen.queue)
	wantNotReplicated(t, "a retry on the frozen shard", errRetry, "all-"+frozen.queue)
	for _, sh := range shards[1:] {
		if ok, err := replicaHas(t, sh.replica, s.keys.queue(sh.queue).msg, "one-"+sh.queue); err != nil || !ok {
			t.Fatalf("the other shards' messages were confirmed: want one-%s on %s, have %v %v", sh.queue, sh.replica, ok, err)
		}
	}
	waitFor(t, "the retry of the frozen shard's message is confirmed", func() bool {
		r, err := s.Producer().Enqueue(ctx, msg(frozen.queue, "one-"+frozen.queue))
		return err == nil && r.Duplicate
	})
}

// replicaHas reads HEXISTS key field on the cluster replica at addr
// (READONLY: a replica answers reads of its master's slots).
func replicaHas(t *testing.T, addr, key, field string) (bool, error) {
	t.Helper()
	r := redis.NewClient(&redis.Options{Addr: addr, OnConnect: func(ctx context.Context, cn *redis.Conn) error {
		return cn.ReadOnly(ctx).Err()
	}})
	defer r.Close()
	return r.HExists(context.Background(), key, field).Result()
}

// A shard failover on a Redis Cluster under load: CLUSTER FAILOVER
// TAKEOVER on one shard's replica (promoted at once, without its master's
// agreement: the old master goes on taking writes until the cluster bus
// tells it, as a partitioned master does) while a plain and a durable
// producer enqueue to queues of that shard. Afterwards every message each
// was told is in is looked for: the durable producer's must all be there;
// the plain producer's losses are logged (the window the mode closes; how
// many depends on the machine's timing, so it is measured, not asserted).
func TestDurableEnqueueSurvivesAClusterShardFailover(t *testing.T) {
	ctx := context.Background()
	c := testenv.NewRedisClusterWithReplicas(t)
	rdb := testClient(t, ClientOptions{Addrs: c.Addrs, Cluster: true})
	durable := newTestStore(t, rdb, func(cfg *Config) { cfg.Durable = Durable{Replicas: 1, Timeout: 200 * time.Millisecond} })
	plain := newTestStore(t, rdb, func(cfg *Config) { cfg.Prefix = durable.Prefix() })
	shard := clusterShards(t, c, rdb)[0]
	q := shard.queue

	stop := make(chan struct{})
	var wg sync.WaitGroup
	acked := map[string]*[]string{"durable": new([]string), "plain": new([]string)}
	var mu sync.Mutex
	for name, s := range map[string]*Store{"durable": durable, "plain": plain} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("%s-%06d", name, i)
				for { // the same id until acknowledged, as a producer told "outcome unknown" does
					ectx, cancel := context.WithTimeout(ctx, 2*time.Second)
					_, err := s.Producer().Enqueue(ectx, msg(q, id))
					cancel()
					if err == nil {
						mu.Lock()
						*acked[name] = append(*acked[name], id)
						mu.Unlock()
						break
					}
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond): // a producer's retry pause, not synchronisation
					}
				}
			}
		}()
	}
	waitFor(t, "both producers acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(*acked["durable"]) > 50 && len(*acked["plain"]) > 50
	})
	replica := testClient(t, ClientOptions{Addrs: []string{shard.replica}})
	if err := replica.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		t.Fatalf("CLUSTER FAILOVER TAKEOVER on %s: %v", shard.replica, err)
	}
	old := testClient(t, ClientOptions{Addrs: []string{shard.master}})
	waitFor(t, "the old master demoted", func() bool {
		info, err := old.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "role:slave")
	})
	before := map[string]int{}
	mu.Lock()
	for name, ids := range acked {
		before[name] = len(*ids)
	}
	mu.Unlock()
	waitFor(t, "both producers acknowledged on the new master", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(*acked["durable"]) > before["durable"]+50 && len(*acked["plain"]) > before["plain"]+50
	})
	close(stop)
	wg.Wait()

	lost := map[string]int{}
	for name, ids := range acked {
		for _, id := range *ids {
			if _, err := rdb.ZScore(ctx, durable.keys.queue(q).seen, id).Result(); errors.Is(err, redis.Nil) {
				lost[name]++
			} else if err != nil {
				t.Fatalf("look for %s: %v", id, err)
			}
		}
	}
	t.Logf("shard failover (TAKEOVER): plain producer %d acknowledged, %d of them lost; durable producer %d acknowledged, %d lost",
		len(*acked["plain"]), lost["plain"], len(*acked["durable"]), lost["durable"])
	if lost["durable"] != 0 {
		t.Fatalf("the durable mode: want no acknowledged message lost, have %d of %d", lost["durable"], len(*acked["durable"]))
	}
}
