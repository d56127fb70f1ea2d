package coordinator

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover/internal/testing/testenv"
)

// TestZKLoggerDoesNotBlameCredentials: the library's "authentication
// failed" (its name for the session handshake) is reworded, since it shows
// on a frozen server with no credentials configured.
func TestZKLoggerDoesNotBlameCredentials(t *testing.T) {
	var buf bytes.Buffer
	l := zkLogger{log: hclog.New(&hclog.LoggerOptions{Output: &buf})}
	l.Printf("authentication failed: %s", "read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout")
	out := buf.String()
	if strings.Contains(out, "authentication failed") || !strings.Contains(out, "handshake failed") || !strings.Contains(out, "i/o timeout") {
		t.Fatalf("want the handshake named and the cause kept, have %q", out)
	}
}

// TestCleanCloseIsNotLoggedAsALoss: Close logged "[WARN] zookeeper session
// lost … the session was closed" on every clean shutdown.
func TestCleanCloseIsNotLoggedAsALoss(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	var buf syncBuf
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Connect(ctx, Config{Servers: zk.Addrs, Root: testenv.Chroot(t), SessionTimeout: 4 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	out := buf.String()
	if strings.Contains(out, "[WARN]") || !strings.Contains(out, "zookeeper session closed") {
		t.Fatalf("want an info line that the session was closed and no warning, have:\n%s", out)
	}
}

// syncBuf is a bytes.Buffer safe for the logger's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
