package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

// enqueueAnswer is what POST …/jobs answered.
type enqueueAnswer struct {
	status int
	body   string
	ids    []string // the ids the answer names (results, or "ids" of a 5xx)
	dups   []bool
}

func (r *rig) enqueue(q, body string) enqueueAnswer {
	r.t.Helper()
	st, b := r.call("producer", "POST", "/api/v1/queues/"+q+"/jobs", body)
	a := enqueueAnswer{status: st, body: b}
	var v struct {
		ID        string   `json:"id"`
		Duplicate bool     `json:"duplicate"`
		IDs       []string `json:"ids"`
		Jobs      []struct {
			ID        string `json:"id"`
			Duplicate bool   `json:"duplicate"`
		} `json:"jobs"`
	}
	json.Unmarshal([]byte(b), &v)
	switch {
	case st >= 500:
		a.ids = v.IDs
	case v.Jobs != nil:
		for _, j := range v.Jobs {
			a.ids, a.dups = append(a.ids, j.ID), append(a.dups, j.Duplicate)
		}
	case v.ID != "":
		a.ids, a.dups = []string{v.ID}, []bool{v.Duplicate}
	}
	return a
}

// TestHTTPEnqueueAcrossARedisFreezeIsExactlyOnce freezes Redis (SIGSTOP)
// under a burst of HTTP enqueues (single jobs without an id, single jobs
// with one, batches of three), and has every client do what docs/http-api.md
// tells it: on a 5xx, send the same request again with the ids the answer
// gave. The first attempts are answered 503 naming Redis, with the ids,
// within the request bound; after Redis thaws, every job is in the log
// exactly once, and no first attempt was answered "duplicate".
func TestHTTPEnqueueAcrossARedisFreezeIsExactlyOnce(t *testing.T) {
	redis := testenv.NewRedis(t, testenv.RedisOptions{})
	ro := queue.ClientOptions{Addrs: []string{redis.Addr}, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, DialTimeout: 300 * time.Millisecond}
	r := newRigOn(t, testenv.ZooKeeper(t).Addrs, ro, Config{RequestTimeout: time.Second})
	r.srv.cfg.RedisPing = r.store.Ping
	r.queueWith("fz", 0)
	r.withJobs(0)
	if a := r.enqueue("fz", `{"task":"warm"}`); a.status != http.StatusCreated {
		t.Fatalf("warm-up enqueue: want 201, have %d %s", a.status, a.body)
	}

	const clients = 9
	bodies := make([]func(ids []string) string, clients)
	for i := range bodies {
		switch i % 3 {
		case 0: // no id: the server gives one
			bodies[i] = func(ids []string) string {
				if ids == nil {
					return `{"task":"t"}`
				}
				return fmt.Sprintf(`{"task":"t","id":%q}`, ids[0])
			}
		case 1: // the client's own id
			id := fmt.Sprintf("client-%d", i)
			bodies[i] = func([]string) string { return fmt.Sprintf(`{"task":"t","id":%q}`, id) }
		case 2: // a batch of three without ids
			bodies[i] = func(ids []string) string {
				if ids == nil {
					return `{"jobs":[{"task":"t"},{"task":"t"},{"task":"t"}]}`
				}
				var js []string
				for _, id := range ids {
					js = append(js, fmt.Sprintf(`{"task":"t","id":%q}`, id))
				}
				return `{"jobs":[` + strings.Join(js, ",") + `]}`
			}
		}
	}

	redis.Pause(t)
	first := make([]enqueueAnswer, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { first[i] = r.enqueue("fz", bodies[i](nil)) })
	}
	wg.Wait()
	redis.Resume(t)

	want := map[string]bool{}
	for i, a := range first {
		switch {
		case a.status == http.StatusServiceUnavailable:
			if !strings.Contains(a.body, "Redis") || !strings.Contains(a.body, "outcome unknown") {
				t.Errorf("client %d: a 503 that does not name Redis or say the outcome is unknown: %s", i, a.body)
			}
		case a.status == http.StatusCreated:
		default:
			t.Fatalf("client %d, first attempt during the freeze: want 503 (or 201), have %d %s", i, a.status, a.body)
		}
		wantN := 1
		if i%3 == 2 {
			wantN = 3
		}
		if len(a.ids) != wantN {
			t.Fatalf("client %d: want the answer to carry %d ids, have %v: %s", i, wantN, a.ids, a.body)
		}
		for j, d := range a.dups {
			if d {
				t.Errorf("client %d: the first attempt of id %s answered duplicate", i, a.ids[j])
			}
		}
		for _, id := range a.ids {
			want[id] = true
		}
		// Retry with the same ids until the outcome is known.
		for a.status >= 500 {
			ids := a.ids
			a = r.enqueue("fz", bodies[i](ids))
			if a.status < 500 && (a.status < 200 || a.status > 201) {
				t.Fatalf("client %d, retry: want 200 or 201, have %d %s", i, a.status, a.body)
			}
			if a.status < 500 && strings.Join(a.ids, ",") != strings.Join(ids, ",") {
				t.Fatalf("client %d, retry: want the same ids %v, have %v", i, ids, a.ids)
			}
		}
	}

	entries, err := r.store.Log().ReadAfter(context.Background(), "fz", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range entries {
		count[e.ID]++
	}
	for id := range want {
		if count[id] != 1 {
			t.Errorf("job %s: want once in the log, have %d times", id, count[id])
		}
	}
	if len(entries) != len(want)+1 { // + the warm-up
		t.Errorf("log: want %d entries (the jobs and the warm-up), have %d", len(want)+1, len(entries))
	}
}
