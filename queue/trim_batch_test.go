package queue

import (
	"context"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

var _ = addContractCases(contractCase{"TrimMany", testTrimMany})

// TrimMany trims each queue of the batch exactly as Trim would (a queue
// with more than one trim chunk too), keeps the outcome records given, and
// reports a bad request alone.
func testTrimMany(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	sizes := map[string]int{"tm-a": 3, "tm-b": 1500, "tm-c": 2}
	offsets := map[string]drover.Position{}
	for q, n := range sizes {
		msgs := make([]*drover.Message, n)
		for i := range msgs {
			msgs[i] = msg(q, "")
		}
		res, err := s.EnqueueBatch(ctx, msgs)
		if err != nil {
			t.Fatalf("EnqueueBatch %s: %v", q, err)
		}
		offsets[q] = res[n-2].Position // all but the last
	}
	rec := []drover.Outcome{{ID: "done-1", State: drover.JobSucceeded, Task: "t", Member: "w1"}}
	reqs := []drover.TrimRequest{
		{Queue: "tm-a", Offset: offsets["tm-a"], Outcomes: rec},
		{Queue: "bad queue", Offset: 1},
		{Queue: "tm-b", Offset: offsets["tm-b"]},
		{Queue: "tm-c", Offset: offsets["tm-c"]},
	}
	errs := s.TrimMany(ctx, reqs)
	if len(errs) != len(reqs) {
		t.Fatalf("want %d results, have %d", len(reqs), len(errs))
	}
	if errs[1] == nil {
		t.Fatal("a bad queue name: want its error")
	}
	for _, i := range []int{0, 2, 3} {
		if errs[i] != nil {
			t.Fatalf("%s: %v", reqs[i].Queue, errs[i])
		}
		q := reqs[i].Queue
		qk := s.keys.queue(q)
		if n := zcountAfter(t, rdb, qk.log, 0); n != 1 {
			t.Fatalf("%s: want only the last entry left, have %d", q, n)
		}
		if n, err := rdb.HLen(ctx, qk.msg).Result(); err != nil || n != 1 {
			t.Fatalf("%s: want one envelope left, have %d, %v", q, n, err)
		}
	}
	if n, err := s.Outcomes(ctx, "tm-a"); err != nil || n != 1 {
		t.Fatalf("tm-a: want its one record kept, have %d, %v", n, err)
	}
	if n, err := s.Outcomes(ctx, "tm-c"); err != nil || n != 0 {
		t.Fatalf("tm-c: want no record, have %d, %v", n, err)
	}
}
