package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// BenchmarkRecordOutcomes: writing outcome records in batches as the worker
// does after a commit (no trim work: the log is empty).
func BenchmarkRecordOutcomes(b *testing.B) {
	for _, batch := range []int{100, 10000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			recs := make([]drover.Outcome, batch)
			for i := range recs {
				recs[i] = drover.Outcome{ID: fmt.Sprintf("%026d", i), State: drover.JobSucceeded, Task: "bench.noop",
					FinishedAt: time.Now(), Duration: 0.000012, Member: "worker-1"}
			}
			keep := drover.Duration(time.Minute) // the buckets expire by themselves
			policy := drover.Outcomes{Max: 1 << 30, Retention: &keep}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				for j := range recs {
					recs[j].ID = fmt.Sprintf("%d-%d", i, j)
				}
				if _, err := s.Log().TrimRecording(ctx, "bench", 0, 0, recs, policy); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "records/s")
			b.Cleanup(func() {
				k := s.keys.queue("bench")
				s.rdb.Del(context.Background(), k.done)
			})
		})
	}
}

// BenchmarkRecordOneCommands: the busy runtime's case, one record per queue
// per commit, written by the committer's trim-many call for 64 queues at a
// time (as Log.TrimMany) and by record-outcomes alone (a revoke). It
// reports the Redis commands each record costs (INFO commandstats, commands
// run by the scripts; the script calls themselves not counted): for
// trim-many the commands of the same trims without records are subtracted.
// buckets=1: the default bound (10,000), the queue's records in one bucket;
// buckets=8: bound 80 (10 per bucket), 8 buckets held and a new bucket every
// 10 records, so rotations and the bound's enforcement are included.
func BenchmarkRecordOneCommands(b *testing.B) {
	for _, c := range []struct {
		name string
		max  int
	}{{"buckets=1", 10000}, {"buckets=8", 80}} {
		b.Run(c.name, func(b *testing.B) { benchRecordOneCommands(b, c.max) })
	}
}

func benchRecordOneCommands(b *testing.B, maxRecords int) {
	s := benchStore(b)
	ctx := context.Background()
	const queues = 64
	keep := drover.Duration(time.Hour)
	policy := drover.Outcomes{Max: maxRecords, Retention: &keep}
	reqs := make([]drover.TrimRequest, queues)
	round := func(i int, records bool) {
		for q := range reqs {
			reqs[q] = drover.TrimRequest{Queue: fmt.Sprintf("busy%02d", q), Policy: policy}
			if records {
				reqs[q].Outcomes = []drover.Outcome{{ID: fmt.Sprintf("j%d", i), State: drover.JobSucceeded,
					Task: "bench.noop", FinishedAt: time.Now(), Member: "worker-1"}}
			}
		}
		for _, err := range s.Log().TrimMany(ctx, reqs) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range 80 { // the queues have buckets already
		round(-1-i, true)
	}
	b.ResetTimer()
	before := scriptCommands(b, s)
	for i := 0; i < b.N; i++ {
		round(i, false)
	}
	plain := scriptCommands(b, s) - before
	before = scriptCommands(b, s)
	for i := 0; i < b.N; i++ {
		round(i, true)
	}
	withRecords := scriptCommands(b, s) - before
	before = scriptCommands(b, s)
	for i := 0; i < b.N; i++ {
		o := []drover.Outcome{{ID: fmt.Sprintf("r%d", i), State: drover.JobRevoked, FinishedAt: time.Now()}}
		if err := s.recordOutcomes(ctx, s.keys.queue("busy00"), o, policy); err != nil {
			b.Fatal(err)
		}
	}
	alone := scriptCommands(b, s) - before
	b.StopTimer()
	b.ReportMetric(float64(withRecords-plain)/float64(b.N*queues), "trim-many-cmds/record")
	b.ReportMetric(float64(alone)/float64(b.N), "record-outcomes-cmds/record")
	b.Cleanup(func() {
		for q := range queues {
			k := s.keys.queue(fmt.Sprintf("busy%02d", q))
			s.rdb.Del(context.Background(), k.done, k.seen, k.log, k.msg)
		}
	})
}

// scriptCommands is the count of commands the server has run, but for the
// script calls themselves and the INFO that reads it.
func scriptCommands(b *testing.B, s *Store) int64 {
	b.Helper()
	info, err := s.rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		switch name {
		case "cmdstat_info", "cmdstat_evalsha", "cmdstat_eval", "cmdstat_script":
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		c, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			b.Fatalf("commandstats %q: %v", line, err)
		}
		n += c
	}
	return n
}
