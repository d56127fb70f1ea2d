package testenv

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the calling goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalOf runs f with a fatalRecorder and returns what it failed with ("":
// it did not fail).
func fatalOf(f func(t testing.TB)) string {
	r := &fatalRecorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

func TestFaultHelpersRefuseAServerWithoutProcess(t *testing.T) {
	redis := newRedisServer("127.0.0.1:1", nil)
	zk := newZKServer("127.0.0.1:2", []string{"127.0.0.1:2"}, nil)
	for _, c := range []struct {
		name, want string
		f          func(t testing.TB)
	}{
		{"redis Stop", "redis 127.0.0.1:1 was not started by testenv (environment or Docker): use NewRedis", redis.Stop},
		{"redis Kill", "use NewRedis", redis.Kill},
		{"redis Start", "use NewRedis", redis.Start},
		{"redis Pause", "use NewRedis", redis.Pause},
		{"redis Resume", "use NewRedis", redis.Resume},
		{"zookeeper Stop", "zookeeper 127.0.0.1:2 was not started by testenv (environment or Docker): use NewZooKeeper or NewZKEnsemble", zk.Stop},
		{"zookeeper Pause", "use NewZooKeeper or NewZKEnsemble", zk.Pause},
	} {
		if have := fatalOf(c.f); !strings.Contains(have, c.want) {
			t.Errorf("%s on a server without process: want a failure saying %q, have %q", c.name, c.want, have)
		}
	}
	if redis.PID() != 0 || zk.PID() != 0 {
		t.Errorf("PID of servers without process: want 0 and 0, have %d and %d", redis.PID(), zk.PID())
	}
}
