package queue

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// What the lone and the many-message enqueue scripts do and cost
// (docs/decisions.md, "Issue 43: enqueue at asynq's cost").

// The lone enqueue script's position rule, for each kind of estimate:
// taken when after the last position and at most an hour past it; last+1
// when not after it; Redis's TIME when there is none, no last position, or
// it is over an hour ahead. Positions strictly increase throughout, and
// :seq is the last position.
func TestEnqueueOnePositionRule(t *testing.T) {
	ctx := context.Background()
	rdb := testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	s := newTestStore(t, rdb, nil)
	qk := s.keys.queue("hint")
	redisNow := func() int64 {
		t.Helper()
		tm, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatalf("TIME: %v", err)
		}
		return tm.UnixMicro()
	}
	n := 0
	enqueue := func(hint string) int64 {
		t.Helper()
		n++
		id := fmt.Sprintf("m%d", n)
		pos, err := rdb.Eval(ctx, enqueueOneSource, qk.enqueueOne, "", "hint", id, `{}`, hint).Int64()
		if err != nil {
			t.Fatalf("enqueue with estimate %q: %v", hint, err)
		}
		if seq, err := rdb.Get(ctx, qk.seq).Int64(); err != nil || seq != pos {
			t.Fatalf("estimate %q: want :seq %d, have %d, %v", hint, pos, seq, err)
		}
		return pos
	}
	const hour = int64(3_600_000_000)

	before := redisNow()
	far := before + 10*hour
	first := enqueue(strconv.FormatInt(far, 10)) // a new queue: TIME, not the estimate
	if first < before || first >= far {
		t.Fatalf("new queue: want Redis's time (≥ %d, not the estimate %d), have %d", before, far, first)
	}
	if have := enqueue(strconv.FormatInt(first+1000, 10)); have != first+1000 {
		t.Fatalf("estimate 1 ms after the last: want it as the position %d, have %d", first+1000, have)
	}
	last := first + 1000
	if have := enqueue(strconv.FormatInt(last-5000, 10)); have != last+1 {
		t.Fatalf("estimate behind the last position: want last+1 = %d, have %d", last+1, have)
	}
	last++
	if have := enqueue(strconv.FormatInt(last+hour, 10)); have != last+hour {
		t.Fatalf("estimate an hour ahead: want it as the position %d, have %d", last+hour, have)
	}
	last += hour
	for _, bad := range []string{strconv.FormatInt(last+hour+1, 10), "0", "", "1e20", "-5"} {
		have := enqueue(bad)
		if have != last+1 { // Redis's clock is behind the last position now
			t.Fatalf("estimate %q: want max(TIME, last+1) = %d, have %d", bad, last+1, have)
		}
		last = have
	}
	if dup, err := rdb.Eval(ctx, enqueueOneSource, qk.enqueueOne, "", "hint", "m1", `{}`, strconv.FormatInt(last+10, 10)).Int64(); err != nil || dup != -1 {
		t.Fatalf("a known id: want -1, have %d, %v", dup, err)
	}
	if seq, err := rdb.Get(ctx, qk.seq).Int64(); err != nil || seq != last {
		t.Fatalf("after a duplicate: want :seq unchanged at %d, have %d, %v", last, seq, err)
	}
}

// A lone enqueue, the commonest call, costs Redis its script call and four
// commands (HSETNX, SET … GET, ZADD, and the :owner GET with the PUBLISH of
// the wake-up), two fewer without wake-ups, and no TIME but the Store's
// one reading; the figures are those of docs/decisions.md ("Issue 43:
// enqueue at asynq's cost"). Counted on a private server by INFO
// commandstats, which counts the commands scripts call.
func TestLoneEnqueueCommands(t *testing.T) {
	for _, c := range []struct {
		name    string
		wakeups bool
		want    map[string]int // per message
	}{
		{"wake-ups", true, map[string]int{"evalsha": 1, "hsetnx": 1, "set": 1, "zadd": 1, "get": 1, "publish": 1}},
		{"no wake-ups", false, map[string]int{"evalsha": 1, "hsetnx": 1, "set": 1, "zadd": 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			srv := testenv.NewRedis(t, testenv.RedisOptions{})
			rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
			// A clock that moves 1 ms a reading, whatever the test's pace:
			// the estimate moves on with it, and the one TIME reading is
			// not redisClockTTL old before the test ends.
			clk := &tickClock{now: time.Now()}
			s := newTestStore(t, rdb, func(cfg *Config) { cfg.DisableWakeups = !c.wakeups; cfg.Clock = clk })
			mustEnqueue(t, s, msg("lone", "")) // registers the queue (enqueue-spread beside the SADD), reads TIME
			clk.skip(pastFirstPosition)
			mustEnqueue(t, s, msg("lone", "")) // loads enqueue-one (NOSCRIPT, then EVAL)
			if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			const n = 50
			for range n {
				mustEnqueue(t, s, msg("lone", ""))
			}
			have := commandCalls(t, rdb)
			for name, per := range c.want {
				if have[name] != per*n {
					t.Errorf("%s: want %d calls for %d lone enqueues, have %d (all: %v)", name, per*n, n, have[name], have)
				}
				delete(have, name)
			}
			if len(have) > 0 {
				t.Errorf("want no other commands, have %v", have)
			}
		})
	}
}

// Lone enqueues from Stores whose estimates of Redis's clock disagree (one
// runs ahead 1 ms a reading of its clock, one stands still, one is the
// system clock), all at once into one queue: every call gets its own
// position, each Store's positions increase in its call order, and the log
// holds each message at the position its call returned, with :seq the
// highest.
func TestLoneEnqueuesWithDisagreeingEstimates(t *testing.T) {
	ctx := context.Background()
	rdb := testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	prefix := testenv.Prefix(t)
	clocks := []drover.Clock{&tickClock{now: time.Now()}, &setClock{now: time.Now()}, drover.SystemClock{}}
	stores := make([]*Store, len(clocks))
	for i, clk := range clocks {
		s, err := New(Config{Client: rdb, Prefix: prefix, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	const q, each = "skew", 300
	mustEnqueue(t, stores[0], msg(q, "")) // a last position, so the estimates count
	positions := make([][]EnqueueResult, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		mustEnqueue(t, s, msg(q, "")) // registers the queue in this Store: the next calls go alone
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				res, err := s.Producer().Enqueue(ctx, msg(q, ""))
				if err != nil {
					t.Error(err)
					return
				}
				positions[i] = append(positions[i], res)
			}
		}()
	}
	wg.Wait()
	seen := map[drover.Position]string{}
	var highest drover.Position
	for i, rs := range positions {
		for j, r := range rs {
			if j > 0 && r.Position <= rs[j-1].Position {
				t.Fatalf("store %d: call %d got position %d after %d", i, j, r.Position, rs[j-1].Position)
			}
			if other, dup := seen[r.Position]; dup {
				t.Fatalf("position %d given to %s and %s", r.Position, other, r.ID)
			}
			seen[r.Position] = r.ID
			highest = max(highest, r.Position)
			score, err := rdb.ZScore(ctx, stores[0].keys.queue(q).log, r.ID).Result()
			if err != nil || drover.Position(score) != r.Position {
				t.Fatalf("store %d: %s: want log position %d, have %v, %v", i, r.ID, r.Position, score, err)
			}
		}
	}
	if seq, err := rdb.Get(ctx, stores[0].keys.queue(q).seq).Int64(); err != nil || drover.Position(seq) != highest {
		t.Fatalf("want :seq at the highest position %d, have %d, %v", highest, seq, err)
	}
}

// The many-message script: consecutive positions from max(estimate, last
// + 1) under the lone script's rule, -1 for an id :msg holds (its envelope
// untouched) and for an id's second copy in one call, :seq at the last
// position, nothing written when every id is known.
func TestEnqueueManyScript(t *testing.T) {
	ctx := context.Background()
	rdb := testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	s := newTestStore(t, rdb, nil)
	qk := s.keys.queue("many")
	enqueue := func(hint int64, ids ...string) []int64 {
		t.Helper()
		args := []any{"", "many", hint}
		for _, id := range ids {
			args = append(args, id, `{"id":"`+id+`","n":2}`)
		}
		res, err := rdb.Eval(ctx, enqueueManySource, qk.enqueueOne, args...).Int64Slice()
		if err != nil || len(res) != len(ids) {
			t.Fatalf("enqueue %v: want %d results, have %v, %v", ids, len(ids), res, err)
		}
		return res
	}
	seq := func() int64 {
		t.Helper()
		v, err := rdb.Get(ctx, qk.seq).Int64()
		if err != nil {
			t.Fatalf("GET seq: %v", err)
		}
		return v
	}
	const hour = int64(3_600_000_000)
	tm, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	before := tm.UnixMicro()

	first := enqueue(before+10*hour, "a", "b", "c") // new queue: TIME
	if first[0] < before || first[0] >= before+hour || first[1] != first[0]+1 || first[2] != first[0]+2 || seq() != first[2] {
		t.Fatalf("new queue: want 3 consecutive positions from Redis's time (≥ %d), :seq at the last; have %v, :seq %d", before, first, seq())
	}
	if err := rdb.HSet(ctx, qk.msg, "known", "kept").Err(); err != nil {
		t.Fatal(err)
	}
	hint := first[2] + 500
	got := enqueue(hint, "d", "known", "e", "d")
	if want := []int64{hint, -1, hint + 1, -1}; !slices.Equal(got, want) {
		t.Fatalf("estimate after the last: want %v, have %v", want, got)
	}
	if env, err := rdb.HGet(ctx, qk.msg, "known").Result(); err != nil || env != "kept" {
		t.Fatalf("a known id's envelope: want it kept, have %q, %v", env, err)
	}
	if got := enqueue(hint-100, "f", "g"); got[0] != hint+2 || got[1] != hint+3 || seq() != hint+3 {
		t.Fatalf("estimate behind the last: want %d, %d, have %v, :seq %d", hint+2, hint+3, got, seq())
	}
	last := seq()
	if got := enqueue(last+1, "a", "known"); got[0] != -1 || got[1] != -1 || seq() != last {
		t.Fatalf("every id known: want -1, -1 and :seq %d, have %v, :seq %d", last, got, seq())
	}
	log, err := rdb.ZRangeWithScores(ctx, qk.log, 0, -1).Result()
	if err != nil || len(log) != 7 {
		t.Fatalf("want 7 log entries (a b c d e f g), have %v, %v", log, err)
	}
	for i := 1; i < len(log); i++ {
		if log[i].Score <= log[i-1].Score {
			t.Fatalf("log not strictly increasing: %v", log)
		}
	}
}

// Concurrent callers' messages coalesced into one call cost Redis the
// script call and six commands (HMGET, HSET, SET … GET, ZADD, and the
// :owner GET with the PUBLISH), whatever their number: the general script
// ran TIME, MGET, SET, ZADD, PUBLISH and an HSETNX per message.
func TestEnqueueManyCommands(t *testing.T) {
	ctx := context.Background()
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	s := newTestStore(t, rdb, func(cfg *Config) { cfg.Clock = &tickClock{now: time.Now()} })
	mustEnqueue(t, s, msg("many", ""))                                                                             // registers the queue
	if _, err := s.Producer().EnqueueBatch(ctx, []*drover.Message{msg("many", ""), msg("many", "")}); err != nil { // loads the script
		t.Fatal(err)
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const calls, per = 5, 20
	for range calls {
		batch := make([]*drover.Message, per)
		for i := range batch {
			batch[i] = msg("many", "")
		}
		res, err := s.Producer().EnqueueBatch(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(res); i++ {
			if res[i].Position != res[i-1].Position+1 {
				t.Fatalf("want consecutive positions in batch order, have %v", res)
			}
		}
	}
	info, err := rdb.Info(ctx, "commandstats").Result()
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
		var n int
		if _, err := fmt.Sscanf(rest, "calls=%d", &n); err != nil || name == "info" || strings.HasPrefix(name, "config") {
			continue
		}
		have[name] = n
	}
	want := map[string]int{"evalsha": calls, "hmget": calls, "hset": calls, "set": calls, "zadd": calls, "get": calls, "publish": calls}
	if !maps.Equal(have, want) {
		t.Fatalf("for %d calls of %d messages: want commands %v, have %v", calls, per, want, have)
	}
}

// What a lone Enqueue allocates on the client (docs/decisions.md, "Issue
// 43: a lone enqueue's client CPU"): the request, its id and its envelope,
// the command and its arguments, and go-redis's connection check. It was
// 22: the flush's detached context and fourteen more around redis.Script.Run
// (two argument slices, a box per key and per argument, the reply's box).
func TestLoneEnqueueAllocations(t *testing.T) {
	for _, c := range []struct {
		name    string
		wakeups bool
	}{{"wake-ups", true}, {"no wake-ups", false}} {
		t.Run(c.name, func(t *testing.T) {
			rdb := testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
			s := newTestStore(t, rdb, func(cfg *Config) { cfg.DisableWakeups = !c.wakeups })
			ctx := context.Background()
			m := msg("allocs", "")
			first := mustEnqueue(t, s, m) // registers the queue
			mustEnqueue(t, s, m)          // loads the script if the server lacks it, reads TIME
			var res EnqueueResult
			var err error
			allocs := testing.AllocsPerRun(200, func() {
				res, err = s.Producer().Enqueue(ctx, m)
			})
			if err != nil || res.Position <= first.Position || res.Duplicate || len(res.ID) != 26 {
				t.Fatalf("want a new position after %d and a generated id, have %+v, %v", first.Position, res, err)
			}
			bound := float64(maxLoneEnqueueAllocs)
			if raceEnabled {
				bound++ // json.Valid's pooled scanner, dropped by -race a quarter of the time: 8.6 measured
			}
			if allocs > bound {
				t.Fatalf("a lone enqueue: want at most %.0f allocations, have %.1f", bound, allocs)
			}
		})
	}
}

// maxLoneEnqueueAllocs is TestLoneEnqueueAllocations' bound: five of
// Drover's (request, id, envelope, the command's arguments, the command)
// and go-redis's three for the pooled connection's liveness check.
const maxLoneEnqueueAllocs = 8

// A batch of generated ids to one registered queue (enqueue-many, what
// the coalescer sends for concurrent callers) allocates per message its
// request, id and envelope, and no box per argument or per reply value.
func TestEnqueueManyAllocationsPerMessage(t *testing.T) {
	rdb := testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	s := newTestStore(t, rdb, nil)
	ctx := context.Background()
	mustEnqueue(t, s, msg("allocs-many", "")) // registers the queue
	const n = 100
	batch := make([]*drover.Message, n)
	for i := range batch {
		batch[i] = msg("allocs-many", "")
	}
	var res []EnqueueResult
	var err error
	allocs := testing.AllocsPerRun(20, func() {
		res, err = s.Producer().EnqueueBatch(ctx, batch)
	})
	if err != nil || len(res) != n || res[0].Position == 0 || res[n-1].Position != res[0].Position+n-1 {
		t.Fatalf("want %d consecutive positions, have %v, %v", n, res, err)
	}
	if per := allocs / n; per > maxManyEnqueueAllocsPerMessage {
		t.Fatalf("a batch of %d: want at most %.1f allocations a message, have %.2f", n, maxManyEnqueueAllocsPerMessage, per)
	}
}

// maxManyEnqueueAllocsPerMessage is TestEnqueueManyAllocationsPerMessage's
// bound: 3.1 measured (main: 6.2), 3.6 under -race, where sync.Pool drops
// some of what it is given (json.Valid's scanner comes from one).
const maxManyEnqueueAllocsPerMessage = 4.5

// A batch over many registered queues, a message or two each (a fleet's
// keys), goes as the spread and many-message scripts in one pipeline: one
// enqueue-spread call for the queues of one message, an enqueue-many call
// for each queue of two; per queue HSETNX or HMGET and HSET, SET … GET,
// ZADD, the :owner GET and, the queues having no owner, a PUBLISH each on
// the unowned channel; no TIME and no MGET, which the general script runs
// in every call (docs/decisions.md, "Issue 43: a fleet's batch goes
// through the lone scripts", "Issue 43: a fleet's batch in one call, its
// wake-ups one per owner"). Each message lands at the position it was
// answered, in its queue's order.
func TestASpreadBatchGoesThroughTheLoneScripts(t *testing.T) {
	ctx := context.Background()
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	clk := &tickClock{now: time.Now()}
	s := newTestStore(t, rdb, func(cfg *Config) { cfg.Clock = clk })
	const queues = 20
	var batch, seconds []*drover.Message
	for i := range queues {
		q := fmt.Sprintf("key-%02d", i)
		mustEnqueue(t, s, msg(q, "")) // registers the queue
		batch = append(batch, msg(q, ""))
		if i%4 == 0 { // every fourth queue gets a second message, later in the batch
			seconds = append(seconds, msg(q, ""))
		}
	}
	batch = append(batch, seconds...)
	mustEnqueue(t, s, msg("key-00", ""))                             // reads the clock: the batches use the estimate
	if _, err := s.Producer().EnqueueBatch(ctx, batch); err != nil { // loads the scripts
		t.Fatal(err)
	}
	for _, flush := range []bool{false, true} {
		if flush { // the server forgot the scripts: every call is sent again as an EVAL
			if err := rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		res, err := s.Producer().EnqueueBatch(ctx, batch)
		if err != nil || len(res) != len(batch) {
			t.Fatalf("flush %v: want %d results, have %v, %v", flush, len(batch), res, err)
		}
		have := commandCalls(t, rdb)
		if have["time"] != 0 || have["mget"] != 0 {
			t.Errorf("flush %v: want no TIME and no MGET, have %v", flush, have)
		}
		calls := len(seconds) + 1 // a call per queue of two, one for the others
		if have["zadd"] != queues || have["publish"] != queues || have["evalsha"] != calls || !flush && have["eval"] != 0 || flush && have["eval"] != calls {
			t.Errorf("flush %v: want a ZADD and a PUBLISH a queue (%d) and %d script calls, have %v", flush, queues, calls, have)
		}
		last := map[string]drover.Position{}
		for i, r := range res {
			q := batch[i].Queue
			if r.Position <= last[q] || r.Duplicate {
				t.Fatalf("flush %v: message %d to %s: position %d after %d (%+v)", flush, i, q, r.Position, last[q], r)
			}
			last[q] = r.Position
			score, err := rdb.ZScore(ctx, s.keys.queue(q).log, r.ID).Result()
			if err != nil || drover.Position(score) != r.Position {
				t.Fatalf("flush %v: %s %s: want log position %d, have %v, %v", flush, q, r.ID, r.Position, score, err)
			}
		}
	}
}
