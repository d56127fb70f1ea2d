package coordinator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

func TestInvalidQueueNamesAreRefused(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	s := connect(t, server.Addrs, testenv.Chroot(t))
	ctx := ctxT(t)
	for _, name := range []string{"", "a/b", "../x", strings.Repeat("q", drover.MaxQueueNameLen+1), "tab\there", "nul\x00", "bell\a"} {
		checks := map[string]error{
			"create":  s.Queues().Create(ctx, drover.QueueConfig{Name: name}),
			"delete":  s.Queues().Delete(ctx, name),
			"pause":   s.Pauses().Set(ctx, drover.PauseQueue, name, drover.Pause{}),
			"unpause": s.Pauses().Clear(ctx, drover.PauseQueue, name),
		}
		_, checks["claim"] = s.Claims().Claim(ctx, name, Owner{Member: "m"})
		_, checks["read"] = s.Queues().Get(ctx, name)
		_, checks["offset"] = s.Claims().Offset(ctx, name)
		_, checks["owner"] = s.Claims().Owner(ctx, name)
		_, checks["reset"] = s.Claims().ResetOffset(ctx, name, drover.Offset{}, ResetOptions{})
		checks["wait"] = s.Claims().WaitReleased(ctx, name)
		for op, err := range checks {
			mustIs(t, err, drover.ErrInvalidQueueName, op+" "+strings.ToValidUTF8(name[:min(len(name), 20)], "?"))
		}
	}
	// Nothing was created by the refused calls.
	if qs, err := s.Queues().List(ctx); err != nil || len(qs) != 0 {
		t.Fatalf("queues after refused creates: want none, have %v (%v)", qs, err)
	}
}

func TestCorruptNodesGiveClearErrors(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	s := connect(t, server.Addrs, testenv.Chroot(t))
	ctx := ctxT(t)
	garbage := []byte("{not json")
	put := func(rel string) string {
		p := s.path(rel)
		if _, err := s.conn.Create(p, garbage, zk.FlagPersistent, s.acl); err != nil {
			if _, err := s.conn.Set(p, garbage, -1); err != nil {
				t.Fatalf("write garbage to %s: %v", p, err)
			}
		}
		return p
	}
	put("queues/" + registryBucket("broken"))
	queueNode := put("queues/" + registryBucket("broken") + "/broken")
	if err := s.Queues().Create(ctx, drover.QueueConfig{Name: "fine"}); err != nil {
		t.Fatal(err)
	}
	put("assignment")
	offsetNode := put("offsets/broken")
	put("pause/queues/broken")
	put("members/m-junk0000000001")

	_, err := s.Queues().Get(ctx, "broken")
	if err == nil || !strings.Contains(err.Error(), queueNode) {
		t.Fatalf("read corrupt queue: want an error naming %s, have %v", queueNode, err)
	}
	qs, err := s.Queues().List(ctx)
	if err != nil || len(qs) != 2 || qs[0].Err == nil || qs[1].Err != nil {
		t.Fatalf("list with a corrupt queue: want broken (with Err) and fine, have %+v (%v)", qs, err)
	}
	// The corrupt bucket is reported, the others' queues delivered.
	wq := next(t, s.Queues().WatchRegistry(ctx), "watched registry")
	if wq.Len() != 1 || len(wq.Errs) != 1 || !strings.Contains(wq.Errs[0].Error(), "queues/"+registryBucket("broken")) {
		t.Fatalf("watched registry: want fine and the corrupt bucket named, have %v %v", registered(wq), wq.Errs)
	}
	// A write into the corrupt bucket rebuilds it from its config nodes.
	var neighbour string
	for i := 0; neighbour == ""; i++ {
		if q := fmt.Sprintf("n-%d", i); registryBucket(q) == registryBucket("broken") {
			neighbour = q
		}
	}
	if err := s.Queues().Create(ctx, drover.QueueConfig{Name: neighbour, Weight: 3}); err != nil {
		t.Fatalf("create in a corrupt bucket: %v", err)
	}
	wq = next(t, s.Queues().WatchRegistry(ctx), "watched registry after the repair")
	if got := registered(wq); len(wq.Errs) != 0 || got["broken"].Name != "broken" || got[neighbour].Weight != 3 || wq.Len() != 3 {
		t.Fatalf("repaired registry: want broken, %s (weight 3) and fine, have %v %v", neighbour, got, wq.Errs)
	}
	if _, err := s.Assignments().Read(ctx); err == nil || !strings.Contains(err.Error(), "decode assignment") {
		t.Fatalf("corrupt assignment: want a decode error, have %v", err)
	}
	if an := next(t, s.Assignments().Watch(ctx), "watched assignment"); an.Err == nil {
		t.Fatalf("watched corrupt assignment: want Err set, have %+v", an)
	}
	_, err = s.Claims().Offset(ctx, "broken")
	if err == nil || !strings.Contains(err.Error(), offsetNode) {
		t.Fatalf("corrupt offset: want an error naming %s, have %v", offsetNode, err)
	}
	if _, err := s.Claims().Claim(ctx, "broken", Owner{Member: "m"}); err == nil || !strings.Contains(err.Error(), offsetNode) {
		t.Fatalf("claim with a corrupt offset: want an error naming %s, have %v", offsetNode, err)
	}
	ps, err := s.Pauses().Read(ctx)
	if err != nil || len(ps.Errs) != 1 {
		t.Fatalf("corrupt pause flag: want one error, have %+v (%v)", ps, err)
	}
	if _, paused := ps.Paused("broken", ""); !paused {
		t.Fatalf("a corrupt pause flag must still pause its queue")
	}
	ms, err := s.Group().Members(ctx)
	if err != nil || len(ms) != 1 || ms[0].Err == nil {
		t.Fatalf("corrupt member: want it listed with Err, have %+v (%v)", ms, err)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no servers", Config{}, "servers"},
		{"empty server", Config{Servers: []string{" "}}, "servers"},
		{"relative root", Config{Servers: []string{"x:1"}, Root: "drover"}, "root"},
		{"trailing slash", Config{Servers: []string{"x:1"}, Root: "/drover/"}, "root"},
		{"bad cluster", Config{Servers: []string{"x:1"}, Cluster: "a/b"}, "cluster"},
		{"negative timeout", Config{Servers: []string{"x:1"}, SessionTimeout: -1}, "session_timeout"},
		{"bad auth", Config{Servers: []string{"x:1"}, Auth: "nopassword"}, "auth"},
	} {
		_, err := tc.cfg.withDefaults()
		if !errorsIs(err, drover.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: want ErrInvalidConfig naming %s, have %v", tc.name, tc.field, err)
		}
	}
	cfg, err := Config{Servers: []string{"x:1"}}.withDefaults()
	if err != nil || cfg.Root != "/drover/default" || cfg.SessionTimeout != DefaultSessionTimeout || cfg.RequestTimeout != DefaultSessionTimeout {
		t.Fatalf("defaults: have %+v (%v)", cfg, err)
	}
}

func TestDigestAuthProtectsNodes(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s := connect(t, server.Addrs, root, func(c *Config) { c.Auth = "drover:secret" })
	ctx := ctxT(t)
	if err := s.Queues().Create(ctx, drover.QueueConfig{Name: "q"}); err != nil {
		t.Fatalf("create with auth: %v", err)
	}
	if _, err := s.Queues().Get(ctx, "q"); err != nil {
		t.Fatalf("read with auth: %v", err)
	}
	acl, _, err := s.conn.(*zk.Conn).GetACL(root + "/queues/" + registryBucket("q") + "/q")
	if err != nil || len(acl) != 1 || acl[0].Scheme != "digest" {
		t.Fatalf("ACL of a created node: want one digest entry, have %+v (%v)", acl, err)
	}
	// Another client without the credentials cannot read it.
	other, _, err := zk.Connect(server.Addrs, testTimeout, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, _, err := other.Get(root + "/queues/" + registryBucket("q") + "/q"); !errorsIs(err, zk.ErrNoAuth) {
		t.Fatalf("read without credentials: want ErrNoAuth, have %v", err)
	}
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}
