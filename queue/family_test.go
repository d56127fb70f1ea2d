package queue

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

var _ = addContractCases(contractCase{"ScanQueuesWithMessagesFullPass", testScanFullPass})

// A full pass of the backstop scan, taken in small steps, finds every queue
// holding messages; on a Redis Cluster the queues' keys land on every
// master and the one cursor walks them all (it used to scan one node and
// miss the queues of the others).
func testScanFullPass(t *testing.T, rdb redis.UniversalClient) {
	s := newTestStore(t, rdb, nil)
	ctx := context.Background()
	want := map[string]bool{}
	for i := range 60 {
		q := fmt.Sprintf("scan-%02d", i)
		mustEnqueue(t, s, msg(q, ""))
		want[q] = true
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		masters := map[string]bool{}
		for q := range want {
			c, err := cc.MasterForKey(ctx, s.keys.prefix+":{"+q+"}:msg")
			if err != nil {
				t.Fatal(err)
			}
			masters[c.Options().Addr] = true
		}
		if len(masters) < 3 {
			t.Fatalf("the test's queues should land on the 3 masters, they land on %d", len(masters))
		}
	}
	found := map[string]bool{}
	var cursor uint64
	steps := 0
	for {
		step, err := s.Families().ScanQueuesWithMessages(ctx, cursor, 10)
		if err != nil {
			t.Fatal(err)
		}
		steps++
		for _, q := range step.Queues {
			found[q] = true
		}
		if cursor = step.Cursor; cursor == 0 {
			break
		}
		if steps > 100_000 {
			t.Fatal("the scan never ends")
		}
	}
	for q := range want {
		if !found[q] {
			t.Errorf("a full pass of %d steps missed %s (found %d of %d)", steps, q, len(found), len(want))
		}
	}
	for q := range found {
		if !want[q] {
			t.Errorf("the scan found %s, never enqueued to under this prefix", q)
		}
	}
}
