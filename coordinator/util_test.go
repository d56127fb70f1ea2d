package coordinator

import (
	"errors"
	"net"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// fakeNetConn is a net.Conn that does nothing.
type fakeNetConn struct{ net.Conn }
