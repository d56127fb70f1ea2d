package registrar

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// connect opens a session under root and closes it at cleanup.
func connect(t testing.TB, servers []string, root string) *coordinator.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: servers, Root: root, SessionTimeout: 30 * time.Second,
		Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatalf("connect to %v: %v", servers, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
