package coordinator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// commitUntilOK commits to every claim, retrying (bounded by a minute) while
// the ensemble recovers; a fenced claim or a lost session fails the test.
func commitUntilOK(t *testing.T, s *Session, claims []*Claim, pos int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range claims {
		for {
			err := c.Commit(ctx, offsetAt(pos, "m"))
			if err == nil {
				break
			}
			if errorsIs(err, drover.ErrFenced) || errorsIs(err, drover.ErrSessionLost) || ctx.Err() != nil {
				t.Fatalf("commit %s at %d: %v (session %s, %v)", c.Queue(), pos, err, s.State(), s.Err())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// Leader failures of a 3-node ensemble: a killed leader and a frozen one
// (longer than the session timeout). The session and its claims survive
// both; the frozen leader needs the handshake clamp and the drop of silent
// connections.
func TestEnsembleLeaderFailuresKeepTheSession(t *testing.T) {
	t.Parallel()
	ens := testenv.NewZKEnsemble(t)
	// 20 s: a leader election takes a few seconds; the session must be
	// confirmed again within 2/3 of the timeout. With 10 s, a client on
	// the frozen leader dropped it at 5 s and had 1.7 s to be confirmed by
	// another server; beside two test runs it was not (1 run in 3), and a
	// client on a follower was once suspended 4.5 s. The mechanisms under
	// test scale with the timeout (without the drop of silent connections
	// the library waits 2/3 of it and the session is lost whatever it is).
	const timeout = 20 * time.Second
	s := connect(t, ens.Addrs, testenv.Chroot(t), func(c *Config) { c.SessionTimeout = timeout })
	ctx := ctxT(t)
	var claims []*Claim
	for i := range 2 {
		c, err := s.Claims().Claim(ctx, fmt.Sprintf("q%d", i), Owner{Member: "m"})
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		claims = append(claims, c)
	}
	id := s.SessionID()
	commitUntilOK(t, s, claims, 1)

	t.Run("kill leader", func(t *testing.T) {
		leader, err := ens.Leader()
		if err != nil {
			t.Fatalf("find leader: %v", err)
		}
		ens.Nodes[leader].Kill(t)
		commitUntilOK(t, s, claims, 2)
		ens.Nodes[leader].Start(t)
		ens.WaitServing(t)
	})
	t.Run("freeze leader", func(t *testing.T) {
		leader, err := ens.Leader()
		if err != nil {
			t.Fatalf("find leader: %v", err)
		}
		ens.Nodes[leader].Pause(t)
		defer ens.Nodes[leader].Resume(t)
		time.Sleep(timeout + time.Second) // longer than the session timeout
		commitUntilOK(t, s, claims, 3)
	})
	if s.Err() != nil || s.conn.SessionID() != id {
		t.Fatalf("session after leader failures: want %#x alive, have %#x (%v)", id, s.conn.SessionID(), s.Err())
	}
	for _, c := range claims {
		on, err := s.Claims().Offset(ctx, c.Queue())
		if err != nil || on.Offset.Position != 3 {
			t.Fatalf("offset of %s: want 3, have %+v (%v)", c.Queue(), on, err)
		}
	}
}
