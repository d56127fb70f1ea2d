package web

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

// An enqueue that Redis did not confirm as replicated (redis.durable: here
// one replica is required and the test server has none) is a 503 with the
// outcome unknown and the ids, and the retry with the same id is safe: the
// write reached the master, so a producer without the mode is answered
// duplicate.
func TestHTTPEnqueueNotReplicatedIs503WithTheIDs(t *testing.T) {
	r := newRig(t)
	r.queueWith("q", 0)
	plain := r.store
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	if r.store, err = queue.New(queue.Config{Client: rdb, Prefix: plain.Prefix(), Durable: queue.Durable{Replicas: 1, Timeout: 50 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	r.withJobs(0)

	var answer struct {
		Error   string
		Outcome string
		ID      string
		IDs     []string
	}
	body := r.want(503, "producer", "POST", "/api/v1/queues/q/jobs", `{"id":"order-9","task":"t"}`)
	if err := json.Unmarshal([]byte(body), &answer); err != nil {
		t.Fatal(err)
	}
	if answer.Outcome != "unknown" || answer.ID != "order-9" || len(answer.IDs) != 1 || answer.IDs[0] != "order-9" {
		t.Fatalf("not replicated: want outcome unknown with id order-9, have %s", body)
	}
	body = r.want(503, "producer", "POST", "/api/v1/queues/q/jobs", `{"jobs":[{"task":"t"},{"id":"order-10","task":"t"}]}`)
	answer.IDs = nil
	if err := json.Unmarshal([]byte(body), &answer); err != nil {
		t.Fatal(err)
	}
	if answer.Outcome != "unknown" || len(answer.IDs) != 2 || answer.IDs[0] == "" || answer.IDs[1] != "order-10" {
		t.Fatalf("batch not replicated: want outcome unknown with both ids (one generated), have %s", body)
	}
	res, err := plain.Producer().Enqueue(t.Context(), &drover.Message{Queue: "q", ID: "order-9", Task: "t"})
	if err != nil || !res.Duplicate {
		t.Fatalf("the id answered 503 was written on the master: want a duplicate, have %+v, %v", res, err)
	}
}
