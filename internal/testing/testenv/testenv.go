package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/drover-dev/drover/internal/commalist"
	"github.com/drover-dev/drover/internal/localserver"
)

// Run runs the tests and then stops every server this package started. Use it
// from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
func Run(m *testing.M) int {
	code := m.Run()
	StopAll()
	return code
}

// StopAll kills every server process started by this package. It is safe to
// call more than once.
func StopAll() {
	localserver.KillAll()
	stopDocker()
	dirs.Lock()
	for _, d := range dirs.list {
		os.RemoveAll(d)
	}
	dirs.list = nil
	dirs.Unlock()
}

// Prefix returns a Redis key prefix unique to this test, made of letters,
// digits, '-' and '_' only.
func Prefix(t testing.TB) string {
	return "t-" + sanitize(t.Name()) + "-" + randHex(4)
}

// Chroot returns a ZooKeeper root path unique to this test, such as
// "/t/TestClaim-1a2b3c4d". The coordinator creates it on first use.
func Chroot(t testing.TB) string {
	return "/t/" + sanitize(t.Name()) + "-" + randHex(4)
}

func sanitize(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("testenv: crypto/rand: %v", err))
	}
	return hex.EncodeToString(b)
}

// envAddrs returns the comma-separated addresses in the environment variable.
func envAddrs(name string) []string {
	return commalist.Split(os.Getenv(name))
}

// shared starts a server once per test binary and remembers the outcome, so
// that every test asking for it after a failure fails with the same reason.
type shared[T any] struct {
	once sync.Once
	val  T
	err  error
}

// get returns the shared server, found or started by the first call: the
// one at the addresses in the environment variable env when it is set
// (fromEnv makes it), else the one start starts in a temporary directory
// named for kind (removed by StopAll).
func (s *shared[T]) get(t testing.TB, env, kind string, fromEnv func(addrs []string) T, start func(dir string) (T, error)) T {
	t.Helper()
	s.once.Do(func() {
		if a := envAddrs(env); len(a) > 0 {
			s.val = fromEnv(a)
			return
		}
		dir, err := tempDir(kind)
		if err != nil {
			s.err = err
			return
		}
		s.val, s.err = start(dir)
	})
	if s.err != nil {
		t.Fatalf("testenv: %v", s.err)
	}
	return s.val
}

// dirs are temporary directories of shared servers, removed by StopAll.
var dirs = struct {
	sync.Mutex
	list []string
}{}

func tempDir(kind string) (string, error) {
	d, err := os.MkdirTemp("", "drover-"+kind+"-")
	if err != nil {
		return "", fmt.Errorf("create temp dir for %s: %w", kind, err)
	}
	dirs.Lock()
	dirs.list = append(dirs.list, d)
	dirs.Unlock()
	return d, nil
}
