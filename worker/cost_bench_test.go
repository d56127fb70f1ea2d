package worker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/testing/testenv"
)

// BenchmarkLoneMessageRedisCommands: what a message alone on its queue
// costs Redis (issue 43), on real Redis: 200 started queues, parked; each
// gets one simple successful message (enqueued, woken, read, started,
// committed, its record kept, trimmed). It reports every Redis command of
// the run per message, counted by INFO commandstats with the commands the
// Lua scripts call, and the main groups: cmds/msg is the figure issue 43
// sets at <= 6 (docs/decisions.md, "Issue 43: where a lone message's Redis
// commands go"). Counts, not times: the A/B tool compares it on a loaded
// machine.
func BenchmarkLoneMessageRedisCommands(b *testing.B) {
	const queues = 200
	var total int
	by := map[string]int{}
	for range b.N {
		srv := testenv.NewRedis(b, testenv.RedisOptions{})
		r := newRedisStore(b, srv.Addr)
		ctx := context.Background()
		ex := &scriptedExecutor{}
		w := redisWorker(b, "a", r, ex, nil)
		for i := range queues {
			if err := w.Start(queueConfig(fmt.Sprintf("q%03d", i), nil), &memClaim{}); err != nil {
				b.Fatal(err)
			}
		}
		allChecked(b, w)
		allParked(b, w)
		if err := r.rdb.ResetStats(ctx); err != nil {
			b.Fatal(err)
		}
		for i := range queues {
			q := fmt.Sprintf("q%03d", i)
			r.enqueue(b, q, `{}`)
			w.Wake(q)
		}
		waitFor(b, "every message to run", func() bool { return len(ex.runList()) == queues })
		waitFor(b, "every message to be trimmed", func() bool {
			for i := range queues {
				// TYPE: a command the worker never sends, left out below.
				if typ, err := r.rdb.Type(ctx, r.key(fmt.Sprintf("q%03d", i), "msg")); err != nil || typ != "none" {
					return false
				}
			}
			return true
		})
		allParked(b, w)
		stats, err := r.rdb.Info(ctx, "commandstats")
		if err != nil {
			b.Fatal(err)
		}
		n, cmds := commandCalls(stats)
		total += n
		for k, v := range cmds {
			by[k] += v
		}
		w.AbortAll()
	}
	per := func(n int) float64 { return float64(n) / float64(b.N*queues) }
	b.ReportMetric(per(total), "cmds/msg")
	b.ReportMetric(per(by["evalsha"]+by["eval"]), "script-calls/msg")
	var z int
	for k, v := range by {
		if strings.HasPrefix(k, "z") {
			z += v
		}
	}
	b.ReportMetric(per(z), "zset-cmds/msg")
	b.ReportMetric(per(by["hincrby"]), "hincrby/msg")
}
