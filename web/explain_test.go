package web

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

// A request whose work timed out is answered 503 naming every service that
// is down: ZooKeeper whenever the console's session is not connected, even
// when the Redis ping failed as well (CI, 46afe99: work that waited on a
// reconnecting session left the ping no time, and the 503 named only a
// Redis that was well); Redis alone when only its ping fails.
func TestExplainNamesZooKeeperWhenThePingFailsToo(t *testing.T) {
	var zkDown, redisDown bool
	r := newRigOn(t, testenv.ZooKeeper(t).Addrs, queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}}, Config{
		RedisPing: func(context.Context) error {
			if redisDown {
				return errors.New("redis: ping: i/o timeout")
			}
			return nil
		},
		ZooKeeper: func() error {
			if zkDown {
				return fmt.Errorf("%w (session Reconnecting)", ErrZooKeeperDown)
			}
			return nil
		},
	})
	workErr := fmt.Errorf("list queues: %w", os.ErrDeadlineExceeded) // a net.Error, as a socket deadline gives
	for _, c := range []struct {
		zk, redis bool
		want      []string
		not       []string
	}{
		{zk: true, redis: true, want: []string{"ZooKeeper is not reachable", "Redis did not answer a ping", "list queues"}},
		{zk: true, redis: false, want: []string{"ZooKeeper is not reachable", "list queues"}, not: []string{"Redis did not", "Redis does not"}},
		{zk: false, redis: true, want: []string{"Redis does not answer", "list queues"}, not: []string{"ZooKeeper is not"}},
	} {
		zkDown, redisDown = c.zk, c.redis
		err := r.srv.explain(httptest.NewRequest("GET", "/api/v1/queues", nil), workErr)
		var he *httpError
		if !errors.As(err, &he) || he.status != 503 {
			t.Fatalf("zk down %v, redis down %v: want a 503, have %v", c.zk, c.redis, err)
		}
		for _, w := range c.want {
			if !strings.Contains(he.msg, w) {
				t.Errorf("zk down %v, redis down %v: want %q in %q", c.zk, c.redis, w, he.msg)
			}
		}
		for _, w := range c.not {
			if strings.Contains(he.msg, w) {
				t.Errorf("zk down %v, redis down %v: want no %q in %q", c.zk, c.redis, w, he.msg)
			}
		}
	}
}
