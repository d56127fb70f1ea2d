package main

import (
	"net/http"
	"testing"
)

// TestOneAnswerToDoesThisQueueExist: the console (its API), ctl and the
// HTTP producer of a real `drover web` give the same answer for a queue
// configured, a key of a family before its first enqueue, and a name
// neither: one rule (ops.KnownQueue). The console answered 404 for the
// family's key, which ctl and the producer knew.
func TestOneAnswerToDoesThisQueueExist(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "conf", "--task", "*=@go")
	c.ok("ctl", "family", "create", "fam", "--prefix", "fam-", "--task", "*=@go")
	base := startWeb(t, c)
	for _, tc := range []struct {
		queue string
		known bool
	}{{"conf", true}, {"fam-1", true}, {"nosuch", false}} {
		wantStatus, wantExit, wantEnqueue := http.StatusOK, 0, http.StatusCreated
		if !tc.known {
			wantStatus, wantExit, wantEnqueue = http.StatusNotFound, exitNotFound, http.StatusNotFound
		}
		if st, body := webCall("GET", base+"/api/v1/queues/"+tc.queue, ""); st != wantStatus {
			t.Errorf("console: GET /api/v1/queues/%s: want %d, have %d %s", tc.queue, wantStatus, st, body)
		}
		if r := c.run("ctl", "messages", "ls", tc.queue); r.code != wantExit {
			t.Errorf("ctl messages ls %s: want exit %d, have:\n%s", tc.queue, wantExit, r)
		}
		// Last: an enqueue registers a family's key.
		if st, body := webCall("POST", base+"/api/v1/queues/"+tc.queue+"/jobs", `{"task":"t"}`); st != wantEnqueue {
			t.Errorf("producer: POST /api/v1/queues/%s/jobs: want %d, have %d %s", tc.queue, wantEnqueue, st, body)
		}
	}
}
