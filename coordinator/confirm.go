package coordinator

import (
	"context"
	"fmt"
)

// Confirm makes one round trip to the server and reports whether this
// session is still alive and connected. A process that was frozen (SIGSTOP,
// a long GC or VM pause) cannot trust its view of the session: replies that
// sat in the socket buffer make it look fresh for a while. A reply to a
// request sent after the freeze can be trusted. It returns an error wrapping
// drover.ErrSessionLost when the session is gone, and other errors when the
// round trip failed (the caller keeps waiting).
func (s *Session) Confirm(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	_, err := bounded(ctx, s, func(c zkConn) (bool, error) {
		ok, _, err := c.Exists(s.cfg.Root)
		return ok, err
	})
	if err != nil {
		return fmt.Errorf("confirm session: %w", err)
	}
	if st := s.State(); st != Connected {
		return fmt.Errorf("confirm session: %s", st)
	}
	return s.usable()
}
