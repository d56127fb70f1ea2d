package queue

import (
	"context"
	"testing"
	"time"
)

// TestSessionRevocationsExpireWithTheirSessions: a revoked session reads
// revoked until its session's expiry and not after, and the next write
// drops the expired entries, so the set holds only live sessions' ids.
func TestSessionRevocationsExpireWithTheirSessions(t *testing.T) {
	for _, b := range testBackends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			rdb := b.client(t)
			s := newTestStore(t, rdb, nil).Sessions()
			now := time.Unix(1_900_000_000, 0)
			if err := s.Revoke(ctx, "old", now.Add(time.Minute), now); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				id   string
				at   time.Time
				want bool
			}{{"old", now, true}, {"old", now.Add(59 * time.Second), true}, {"old", now.Add(time.Minute), false}, {"other", now, false}} {
				if got, err := s.Revoked(ctx, c.id, c.at); err != nil || got != c.want {
					t.Errorf("Revoked(%s) at +%v: want %v, have %v %v", c.id, c.at.Sub(now), c.want, got, err)
				}
			}
			later := now.Add(2 * time.Minute)
			if err := s.Revoke(ctx, "new", later.Add(time.Hour), later); err != nil {
				t.Fatal(err)
			}
			ids, err := rdb.ZRange(ctx, s.keys.revokedSessions(), 0, -1).Result()
			if err != nil || len(ids) != 1 || ids[0] != "new" {
				t.Fatalf("revocations after the old one expired: want [new], have %v %v", ids, err)
			}
			if full, err := s.RevokedSessionsFull(ctx, later); err != nil || full {
				t.Fatalf("one revocation: want not full, have %v %v", full, err)
			}
		})
	}
}
