package queue

import (
	"context"
	"testing"

	"github.com/drover-dev/drover/internal/testing/testenv"
)

// NewClient authenticates with a password and with an ACL user.
func TestNewClientAuthenticates(t *testing.T) {
	ctx := context.Background()
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	admin := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	if err := admin.Do(ctx, "ACL", "SETUSER", "producer", "on", ">pr0ducer", "~*", "&*", "+@all").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	if err := admin.ConfigSet(ctx, "requirepass", "s3cret").Err(); err != nil {
		t.Fatalf("CONFIG SET requirepass: %v", err)
	}

	for name, o := range map[string]ClientOptions{
		"password": {Addrs: []string{srv.Addr}, Password: "s3cret"},
		"acl user": {Addrs: []string{srv.Addr}, Username: "producer", Password: "pr0ducer"},
	} {
		rdb, err := NewClient(o)
		if err != nil {
			t.Fatalf("%s: NewClient: %v", name, err)
		}
		s := newTestStore(t, rdb, nil)
		r, err := s.Producer().Enqueue(ctx, msg("auth", ""))
		_ = rdb.Close()
		if err != nil || r.Position == 0 {
			t.Fatalf("%s: Enqueue: want a position, have %+v, %v", name, r, err)
		}
	}
	rdb, err := NewClient(ClientOptions{Addrs: []string{srv.Addr}, Password: "wrong"})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer rdb.Close()
	s := newTestStore(t, rdb, nil)
	if _, err := s.Producer().Enqueue(ctx, msg("auth", "")); err == nil {
		t.Fatalf("Enqueue with a wrong password: want an error")
	}
}
