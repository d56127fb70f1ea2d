package jobs

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// TestFinishedJobBehindARunningOneReadsSucceeded: message A (older) still
// runs, so the committed offset stays below it; message B behind it
// finished and its outcome record is written. B reads succeeded, not
// "pending, ahead: 1": its record wins over the offset (issue 41: a
// finished job read pending for 3 min while an older retry ran).
func TestFinishedJobBehindARunningOneReadsSucceeded(t *testing.T) {
	ctx := context.Background()
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	st, err := queue.New(queue.Config{Client: rdb, Prefix: testenv.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	var pos [2]drover.Position
	for i, id := range []string{"A", "B"} {
		res, err := st.Producer().Enqueue(ctx, &drover.Message{ID: id, Queue: "q", Task: "t", Args: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		pos[i] = res.Position
	}
	rec := drover.Outcome{ID: "B", State: drover.JobSucceeded, Task: "t", FinishedAt: time.UnixMicro(int64(pos[1])).Add(time.Second).UTC(), Member: "w1"}
	if _, err := st.Log().TrimRecording(ctx, "q", pos[0]-1, 0, []drover.Outcome{rec}, drover.Outcomes{}); err != nil {
		t.Fatal(err)
	}
	l := &Lookup{Store: st.Jobs(), Fleet: fakeFleet{owner: Owner{Member: "w1", Offset: pos[0] - 1}}}
	have, err := l.Job(ctx, "q", "B")
	if err != nil {
		t.Fatal(err)
	}
	if have.State != drover.JobSucceeded || have.Ahead != nil || have.Member != "w1" {
		t.Fatalf("B finished behind running A: want succeeded by w1 with no ahead, have %s (ahead %v, member %q, note %q)", have.State, have.Ahead, have.Member, have.Note)
	}
	a, err := l.Job(ctx, "q", "A")
	if err != nil {
		t.Fatal(err)
	}
	if a.State != drover.JobPending || a.Ahead == nil || *a.Ahead != 0 {
		t.Fatalf("A (no record, above the offset): want pending with 0 ahead, have %s (ahead %v)", a.State, a.Ahead)
	}
}
