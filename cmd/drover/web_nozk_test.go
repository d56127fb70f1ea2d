package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// TestWebStartsItsProducerAPIWithoutZooKeeper: drover web started while
// ZooKeeper does not answer (every connection to it refused) serves the
// producer API at once: an HTTP enqueue to a queue Redis knows answers
// 201 and the job's status answers, while what needs ZooKeeper answers 503
// naming it; once ZooKeeper answers, the console takes the session and
// serves those pages too. Before issue 41 it exited 4 ("unreachable").
func TestWebStartsItsProducerAPIWithoutZooKeeper(t *testing.T) {
	c := newCluster(t)
	if _, err := c.store().Producer().Enqueue(context.Background(), &drover.Message{Queue: "known", Task: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := c.session().Queues().Create(context.Background(), drover.QueueConfig{Name: "known", Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}); err != nil {
		t.Fatal(err)
	}
	p := testenv.NewProxy(t, c.zk[0])
	p.Cut()
	base, _ := startWebWith(t, c, "DROVER_ZOOKEEPER_SERVERS="+p.Addr, "DROVER_ZOOKEEPER_CONNECT_TIMEOUT=1s")

	st, b := webCall("POST", base+"/api/v1/queues/known/jobs", `{"task":"t","id":"while-zk-down"}`)
	if st != http.StatusCreated {
		t.Fatalf("enqueue to a known queue with ZooKeeper down since start: want 201, have %d %s", st, b)
	}
	if st, b := webCall("GET", base+"/api/v1/queues/known/jobs/while-zk-down", ""); st != http.StatusOK || !strings.Contains(b, `"pending"`) {
		t.Fatalf("job status with ZooKeeper down: want 200 pending, have %d %s", st, b)
	}
	for _, path := range []string{"/api/v1/queues", "/queues", "/api/v1/audit"} {
		if st, b := webCall("GET", base+path, ""); st != http.StatusServiceUnavailable || !strings.Contains(b, "ZooKeeper") {
			t.Fatalf("GET %s with ZooKeeper down since start: want 503 naming ZooKeeper, have %d %.300s", path, st, b)
		}
	}
	if st, b := webCall("GET", base+"/readyz", ""); st != http.StatusServiceUnavailable || !strings.Contains(b, "ZooKeeper") {
		t.Fatalf("/readyz with ZooKeeper down: want 503 naming it, have %d %s", st, b)
	}

	p.Restore()
	eventually(t, 60*time.Second, func() error {
		st, b := webCall("GET", base+"/api/v1/queues", "")
		if st != http.StatusOK || !strings.Contains(b, `"known"`) {
			return fmt.Errorf("after ZooKeeper answers: queues %d %.200s", st, b)
		}
		return nil
	})
	if st, b := webCall("GET", base+"/readyz", ""); st != http.StatusOK {
		t.Fatalf("/readyz once ZooKeeper answers: want 200, have %d %s", st, b)
	}
}
