package coordinator

import (
	"errors"
	"net"

	"github.com/go-zookeeper/zk"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// fakeNetConn is a net.Conn that does nothing.
type fakeNetConn struct{ net.Conn }

// readOpPaths returns the paths a MultiRead's ops read.
func readOpPaths(ops []any) []string {
	var out []string
	for _, op := range ops {
		if o, ok := op.(*zk.GetDataOp); ok {
			out = append(out, o.Path)
		}
	}
	return out
}
