package queue

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// The many-queue calls a worker makes while busy are cut into bounded
// commands, so that no one script or MGET holds single-threaded Redis for
// long (docs/decisions.md, "Busy runtime: what blocks Redis while busy"):
// on a standalone server a batch of N queues is ceil(N/group) commands,
// and the results still come back one per queue, in request order where
// the call promises an order, a bad request failing alone.
func TestManyQueueCallsSplitIntoBoundedCommands(t *testing.T) {
	ctx := context.Background()
	rdb := testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	counts := &commandCounts{}
	rdb.AddHook(counts)
	s := newTestStore(t, rdb, nil)

	// enqueue puts n messages in each of queues (one round trip) and
	// returns each queue's positions in order.
	enqueue := func(queues []string, n func(i int) int) map[string][]drover.Position {
		t.Helper()
		var msgs []*drover.Message
		for i, q := range queues {
			for range n(i) {
				msgs = append(msgs, msg(q, ""))
			}
		}
		res, err := s.Producer().EnqueueBatch(ctx, msgs)
		if err != nil {
			t.Fatalf("EnqueueBatch of %d messages: %v", len(msgs), err)
		}
		pos := map[string][]drover.Position{}
		for i, m := range msgs {
			pos[m.Queue] = append(pos[m.Queue], res[i].Position)
		}
		return pos
	}
	names := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s-%04d", prefix, i)
		}
		return out
	}
	ceil := func(n, k int) int { return (n + k - 1) / k }

	t.Run("TrimMany", func(t *testing.T) {
		queues := names("chunk-trim", 2*trimGroup+3)
		pos := enqueue(queues, func(i int) int { return 2 + i%3 })
		reqs := make([]drover.TrimRequest, len(queues))
		for i, q := range queues {
			// Trim all but the last entry; every other queue records
			// an outcome on the way.
			reqs[i] = drover.TrimRequest{Queue: q, Offset: pos[q][len(pos[q])-2]}
			if i%2 == 0 {
				reqs[i].Outcomes = []drover.Outcome{{ID: "o-" + q, State: drover.JobSucceeded, Task: "t"}}
			}
		}
		reqs[trimGroup].Queue = "bad queue" // its error, and only its, at its index
		warmScript(t, s, trimManyScript)
		counts.reset()
		errs := s.Log().TrimMany(ctx, reqs)
		if want, have := ceil(len(reqs)-1, trimGroup), counts.scripts(trimManyScript); have != want {
			t.Fatalf("trim-many script calls for %d queues (%d per call): want %d, have %d", len(reqs)-1, trimGroup, want, have)
		}
		// One call per round trip: pipelined, the calls ran back to back
		// while other clients' reads waited.
		if want, have := ceil(len(reqs)-1, trimGroup), counts.roundTrips(); have != want {
			t.Fatalf("round trips of TrimMany for %d queues: want %d (one per script call), have %d", len(reqs)-1, want, have)
		}
		if len(errs) != len(reqs) {
			t.Fatalf("want %d results, have %d", len(reqs), len(errs))
		}
		for i, r := range reqs {
			if i == trimGroup {
				if errs[i] == nil {
					t.Fatalf("request %d (a bad queue name): want its error, have nil", i)
				}
				continue
			}
			if errs[i] != nil {
				t.Fatalf("request %d (%s): %v", i, r.Queue, errs[i])
			}
			if n := zcountAfter(t, rdb, s.keys.queue(r.Queue).log, 0); n != 1 {
				t.Fatalf("%s: want only its last entry left, have %d entries", r.Queue, n)
			}
			want := int64(len(r.Outcomes))
			if n, err := s.Jobs().Outcomes(ctx, r.Queue); err != nil || n != want {
				t.Fatalf("%s: want %d outcome records, have %d, %v", r.Queue, want, n, err)
			}
		}
	})

	t.Run("CheckQueues", func(t *testing.T) {
		queues := names("chunk-check", 2*checkGroup+5)
		pos := enqueue(queues, func(int) int { return 1 })
		offsets := make([]drover.Position, len(queues))
		for i, q := range queues {
			offsets[i] = pos[q][0] // processed
			if i%3 == 0 {
				offsets[i]-- // its message waits
			}
		}
		warmScript(t, s, checkScript)
		counts.reset()
		checks, err := s.Log().CheckQueues(ctx, queues, offsets)
		if err != nil {
			t.Fatalf("CheckQueues: %v", err)
		}
		if want, have := ceil(len(queues), checkGroup), counts.scripts(checkScript); have != want {
			t.Fatalf("check script calls for %d queues (%d per call): want %d, have %d", len(queues), checkGroup, want, have)
		}
		if len(checks) != len(queues) {
			t.Fatalf("want every one of %d queues checked, have %d", len(queues), len(checks))
		}
		for i, c := range checks {
			if c.Queue != queues[i] {
				t.Fatalf("check %d: want %s (request order), have %s", i, queues[i], c.Queue)
			}
			if want := i%3 == 0; c.Ready != want {
				t.Fatalf("%s: want ready %v, have %v", c.Queue, want, c.Ready)
			}
		}
	})

	t.Run("QueueHeads", func(t *testing.T) {
		queues := names("chunk-heads", 2*headGroup+7)
		pos := enqueue(queues[1:], func(i int) int { return 1 + i%2 }) // queues[0] never written
		counts.reset()
		heads, err := s.Log().QueueHeads(ctx, queues, nil)
		if err != nil {
			t.Fatalf("QueueHeads: %v", err)
		}
		if want, have := ceil(len(queues), headGroup), counts.named("mget"); have != want {
			t.Fatalf("MGETs for %d queues (%d per MGET): want %d, have %d", len(queues), headGroup, want, have)
		}
		if len(heads) != len(queues) {
			t.Fatalf("want a head for each of %d queues, have %d", len(queues), len(heads))
		}
		for i, q := range queues {
			var want drover.Position
			if p := pos[q]; len(p) > 0 {
				want = p[len(p)-1]
			}
			if heads[i] != want {
				t.Fatalf("head of %s: want %d, have %d", q, want, heads[i])
			}
		}
	})
}

// warmScript loads sc, so that the calls counted next are the EVALSHAs a
// warm server answers (a cold one refuses the first and they are sent
// again with the source).
func warmScript(t *testing.T, s *Store, sc *redis.Script) {
	t.Helper()
	if err := sc.Load(context.Background(), s.rdb).Err(); err != nil {
		t.Fatalf("load script: %v", err)
	}
}

// commandCounts is a client hook that counts the commands the server
// answered without error, by name, and the script calls by script.
type commandCounts struct {
	mu      sync.Mutex
	byName  map[string]int
	bySHA   map[string]int
	trips   int // round trips: single commands and pipelines
	started bool
}

func (c *commandCounts) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byName, c.bySHA, c.trips, c.started = map[string]int{}, map[string]int{}, 0, true
}

func (c *commandCounts) record(cmds ...redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		return
	}
	c.trips++
	for _, cmd := range cmds {
		if cmd.Err() != nil && cmd.Err() != redis.Nil {
			continue
		}
		name := strings.ToLower(cmd.Name())
		c.byName[name]++
		if args := cmd.Args(); name == "evalsha" && len(args) > 1 {
			sha, _ := args[1].(string)
			c.bySHA[sha]++
		}
	}
}

func (c *commandCounts) named(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byName[name]
}

func (c *commandCounts) scripts(sc *redis.Script) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bySHA[sc.Hash()]
}

func (c *commandCounts) roundTrips() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trips
}

func (c *commandCounts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		c.record(cmd)
		return err
	}
}

func (c *commandCounts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		c.record(cmds...)
		return err
	}
}
