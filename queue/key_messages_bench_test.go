package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// BenchmarkKeyMessages is the Redis side of a per-key fleet's messages,
// keys with one message at a time, as the fleet bench runs them but
// without the workers: what a message costs the server, measured on a
// private Redis so that nothing else counts (redis-µs/msg, redis-cmds/msg).
//
// 4,096 queues are routed to one member's batch channel, which a
// subscriber drains, so that the wake-ups carry the messages. A round
// sends one message to each of 256 of them in one EnqueueBatch (the
// enqueue-spread script), then their outcome records as records-only
// requests (record-many, as an owner's committer sends them at a flush,
// each with its bucket note); a queue gets a message every 16 rounds and,
// every 16 messages, its trim (trim-many). One op is 256 rounds: 65,536
// messages and a trim of every queue. Each queue has had one message
// before the meter starts, so that its messages have a position before
// them (a queue's first wake-up carries no message).
func BenchmarkKeyMessages(b *testing.B) {
	const (
		queues   = 4096
		perRound = 256
		rounds   = 256 // an op: every queue 16 messages, then its trim
	)
	srv := testenv.NewRedis(b, testenv.RedisOptions{})
	rdb, err := NewClient(ClientOptions{Addrs: []string{srv.Addr}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rdb.Close() })
	s, err := New(Config{Client: rdb, Prefix: "drover"})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	names := make([]string, queues)
	for i := range names {
		names[i] = fmt.Sprintf("key-%05d", i)
	}
	if err := s.Log().RouteWakeups(ctx, "m1", names...); err != nil {
		b.Fatal(err)
	}
	wakeups, err := s.Listener().Wakeups(ctx, "m1")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for range wakeups {
		}
	}()
	policy := drover.Outcomes{}
	notes := make([]drover.RecordBucket, queues)
	last := make([]drover.Position, queues)
	msgs := make([]*drover.Message, perRound)
	round := func(r int) {
		first := r % (queues / perRound) * perRound
		for i := range msgs {
			msgs[i] = &drover.Message{Queue: names[first+i], Task: "send-email",
				Args: []byte(`{"to":"user@example.com","template":"welcome","user_id":123456}`)}
		}
		res, err := s.Producer().EnqueueBatch(ctx, msgs)
		if err != nil {
			b.Fatal(err)
		}
		reqs := make([]drover.TrimRequest, 0, perRound)
		now := time.Now()
		for i, m := range res {
			q := first + i
			last[q] = m.Position
			reqs = append(reqs, drover.TrimRequest{Queue: names[q], Offset: m.Position, RecordsOnly: true, Policy: policy, Bucket: &notes[q],
				Outcomes: []drover.Outcome{{ID: m.ID, State: drover.JobSucceeded, Task: "send-email", Attempt: 1, FinishedAt: now, Duration: 0.004, Member: "m1"}}})
		}
		if (r+1)%rounds == 0 { // every queue has had 16 messages since its last trim
			for q := range names {
				reqs = append(reqs, drover.TrimRequest{Queue: names[q], Offset: last[q], Policy: policy})
			}
		}
		for i, err := range s.Log().TrimMany(ctx, reqs) {
			if err != nil {
				b.Fatalf("round %d, request %d: %v", r, i, err)
			}
		}
	}
	for r := range queues / perRound { // each queue's first message
		round(r)
	}
	meter := startMeter(b, s)
	for op := range b.N {
		for r := range rounds {
			round(queues/perRound + op*rounds + r)
		}
	}
	meter.stop(b, b.N*rounds*perRound)
}
