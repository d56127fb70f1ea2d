package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// rig is a console over a private ZooKeeper root and Redis prefix, with a
// token per role.
type rig struct {
	t      *testing.T
	zk     *coordinator.Session
	store  *queue.Store
	srv    *Server
	http   *httptest.Server
	tokens map[string]string // role → token
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return newRigOn(t, testenv.ZooKeeper(t).Addrs, queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}}, Config{})
}

// newRigOn is newRig on the given servers; cfg's Ops and Auth are set, its
// other fields are the server's (zero: the test defaults).
func newRigOn(t *testing.T, zkAddrs []string, ro queue.ClientOptions, cfg Config) *rig {
	t.Helper()
	ctx := context.Background()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: zkAddrs, Root: testenv.Chroot(t), SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("connect to ZooKeeper: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	rdb, err := queue.NewClient(ro)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	st, err := queue.New(queue.Config{Client: rdb, Prefix: testenv.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, zk: s, store: st, tokens: map[string]string{}}
	var specs []string
	for _, role := range []auth.Role{auth.Viewer, auth.Producer, auth.Operator, auth.Admin} {
		tok, spec, err := auth.NewToken(role.String()+"-user", role)
		if err != nil {
			t.Fatal(err)
		}
		r.tokens[role.String()] = tok
		specs = append(specs, spec)
	}
	a, err := auth.New(auth.Config{Tokens: specs, Revocations: st.Sessions()}) // as drover web: logouts in Redis
	if err != nil {
		t.Fatal(err)
	}
	o, err := ops.New(ops.Config{ZK: s, Store: st, Cluster: "test"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Ops, cfg.Store, cfg.Auth = o, st, a
	if cfg.SnapshotTTL == 0 {
		cfg.SnapshotTTL = time.Nanosecond
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = 64 << 10
	}
	if r.srv, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	r.http = httptest.NewServer(r.srv.Handler())
	t.Cleanup(r.http.Close)
	return r
}

// queueWith configures q and enqueues n messages.
func (r *rig) queueWith(q string, n int) {
	r.t.Helper()
	ctx := context.Background()
	if err := r.zk.Queues().Create(ctx, drover.QueueConfig{Name: q, Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}); err != nil {
		r.t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := r.store.Producer().Enqueue(ctx, &drover.Message{Queue: q, Task: "t", Args: json.RawMessage(`{"i":1}`)}); err != nil {
			r.t.Fatal(err)
		}
	}
}

// call sends method path with role's token ("" for none) and a JSON body
// ("" for none), and returns the status and the body.
func (r *rig) call(role, method, path, body string) (int, string) {
	r.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.http.URL+path, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if role != "" {
		req.Header.Set("Authorization", "Bearer "+r.tokens[role])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// want fails unless the call answers status; it returns the body.
func (r *rig) want(status int, role, method, path, body string) string {
	r.t.Helper()
	got, b := r.call(role, method, path, body)
	if got != status {
		r.t.Fatalf("%s %s as %q: want %d, have %d: %s", method, path, role, status, got, b)
	}
	return b
}

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}
