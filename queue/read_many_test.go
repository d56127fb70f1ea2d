package queue

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

var _ = addContractCases(
	contractCase{"ReadManyMatchesReadAfter", testReadManyMatchesReadAfter},
)

// One batch mixing queues at different offsets (the start, the middle, the
// end), an empty queue, a poison entry, a queue asked twice, a bad name and
// a read larger than the script's bound returns, for each request, what
// ReadAfter returns for it alone; an error stays with its request.
func testReadManyMatchesReadAfter(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	var names []string
	for q := range 300 { // more than one script call on a standalone server
		name := fmt.Sprintf("many-%03d", q)
		names = append(names, name)
		for i := range q % 4 {
			mustEnqueue(t, s, msg(name, fmt.Sprintf("%s-m%d", name, i)))
		}
	}
	big := "many-big"
	for i := range 1005 {
		mustEnqueue(t, s, msg(big, fmt.Sprintf("b%04d", i)))
	}
	// A poison entry: in the log, no envelope.
	qk := s.keys.queue("many-003")
	last := readAll(t, s, "many-003", 0, 10)
	if err := rdb.ZAdd(ctx, qk.log, redis.Z{Score: float64(last[len(last)-1].Position + 1), Member: "ghost"}).Err(); err != nil {
		t.Fatal(err)
	}

	var reqs []drover.ReadRequest
	for q, name := range names {
		after := drover.Position(0)
		if es := readAll(t, s, name, 0, 10); q%3 == 1 && len(es) > 0 {
			after = es[0].Position // from the middle (or the end)
		}
		reqs = append(reqs, drover.ReadRequest{Queue: name, After: after, N: 1 + q%3})
	}
	reqs = append(reqs,
		drover.ReadRequest{Queue: "many-003", After: 0, N: 10}, // asked twice
		drover.ReadRequest{Queue: big, After: 0, N: 1005},      // above one HMGET
		drover.ReadRequest{Queue: "many-002", After: 0, N: 0},  // nothing asked
		drover.ReadRequest{Queue: "bad name", After: 0, N: 5},  // refused alone
	)
	res := s.Log().ReadMany(ctx, reqs)
	if len(res) != len(reqs) {
		t.Fatalf("want %d results, have %d", len(reqs), len(res))
	}
	bad := len(reqs) - 1
	if res[bad].Err == nil || !strings.Contains(res[bad].Err.Error(), "bad name") {
		t.Fatalf("a bad queue name: want an error naming it, have %v", res[bad].Err)
	}
	for i, r := range reqs[:bad] {
		want, err := s.Log().ReadAfter(ctx, r.Queue, r.After, r.N)
		if err != nil {
			t.Fatal(err)
		}
		if res[i].Err != nil {
			t.Fatalf("%+v: %v", r, res[i].Err)
		}
		if len(res[i].Entries) != len(want) {
			t.Fatalf("%+v: want %d entries, have %d", r, len(want), len(res[i].Entries))
		}
		for j, e := range res[i].Entries {
			if e.Queue != want[j].Queue || e.ID != want[j].ID || e.Position != want[j].Position || string(e.Raw) != string(want[j].Raw) || (e.Raw == nil) != (want[j].Raw == nil) {
				t.Fatalf("%+v: entry %d: want %+v, have %+v", r, j, want[j], e)
			}
		}
	}
	if n := len(res[len(reqs)-3].Entries); n != 1005 {
		t.Fatalf("the large read: want 1005 entries, have %d", n)
	}
	ghost := res[len(reqs)-4].Entries
	if len(ghost) != 4 || ghost[3].ID != "ghost" || ghost[3].Raw != nil {
		t.Fatalf("many-003: want 3 messages and the poison entry last, have %+v", ghost)
	}
}

var _ = addContractCases(
	contractCase{"ReadsReturnRecordedStartsWhenAsked", testReadsReturnRecordedStartsWhenAsked},
)

// The reads return each message's recorded starts (its :attempts field) —
// ReadAfter always, ReadMany when the request asks (Starts) — so that an
// owner knows a message's count without a round trip of its own; a message
// never started says 0, and so does every entry of a read that did not ask.
func testReadsReturnRecordedStartsWhenAsked(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	a := mustEnqueue(t, s, msg("starts", "a"))
	mustEnqueue(t, s, msg("starts", "b"))
	for range 2 {
		if _, err := s.Log().RecordStarts(ctx, []string{"starts"}, []string{a.ID}); err != nil {
			t.Fatal(err)
		}
	}
	counts := func(es []Entry) []int {
		var out []int
		for _, e := range es {
			out = append(out, e.Starts)
		}
		return out
	}
	es, err := s.Log().ReadAfter(ctx, "starts", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if have := counts(es); fmt.Sprint(have) != "[2 0]" {
		t.Fatalf("ReadAfter's starts: want [2 0], have %v", have)
	}
	res := s.Log().ReadMany(ctx, []drover.ReadRequest{{Queue: "starts", N: 10, Starts: true}})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if have := counts(res[0].Entries); fmt.Sprint(have) != "[2 0]" {
		t.Fatalf("ReadMany's starts, asked: want [2 0], have %v", have)
	}
	res = s.Log().ReadMany(ctx, []drover.ReadRequest{{Queue: "starts", N: 10}})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if have := counts(res[0].Entries); fmt.Sprint(have) != "[0 0]" || len(res[0].Entries) != 2 {
		t.Fatalf("ReadMany's starts, not asked: want [0 0], have %v", have)
	}
}
