package coordinator

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// testTimeout is the session timeout of most tests: short, so that loss and
// expiry happen quickly.
const testTimeout = 4 * time.Second

// connect opens a session to servers under root and closes it at cleanup.
func connect(t testing.TB, servers []string, root string, tweak ...func(*Config)) *Session {
	t.Helper()
	cfg := Config{
		Servers:        servers,
		Root:           root,
		SessionTimeout: testTimeout,
		Logger:         testkit.Logger(t, hclog.Warn),
	}
	for _, f := range tweak {
		f(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Connect(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to %v: %v", servers, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ctxT returns a context ending with the test.
func ctxT(t testing.TB) context.Context { return testkit.Context(t) }

// waitState waits until s reaches want or the bound passes.
func waitState(t testing.TB, s *Session, want SessionState, bound time.Duration) {
	t.Helper()
	deadline := time.After(bound)
	for {
		st, changed := s.status()
		if st == want {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("session state: want %s, have %s after %s", want, st, bound)
		}
	}
}

// mustIs fails unless errors.Is(err, target).
func mustIs(t testing.TB, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: want an error wrapping %q, have %v", what, target, err)
	}
}

func offsetAt(pos int64, member string) drover.Offset {
	return drover.Offset{Position: drover.Position(pos), CommittedAt: time.Now().UTC().Truncate(time.Millisecond), Member: member}
}
