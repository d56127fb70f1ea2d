package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Revoked console sessions: the ids of browser sessions ended by a logout,
// each until the session would have expired, so that a copy of a logged-out
// cookie is refused by every console server of the fleet and after a
// restart (issue 41: revocation was in one process's memory).

// MaxRevokedSessions bounds the live revocations. A logout is always
// stored (refusing it would leave the session usable); a login is refused
// while this many are live (RevokedSessionsFull), so the set cannot grow
// past it by more than the logouts under way. Each entry is a 32-character
// id and its expiry: about 6 MB at the bound.
const MaxRevokedSessions = 100_000

// Sessions stores console session revocations: a role of the Store (roles.go).
type Sessions struct{ *core }

// Sessions returns the store's session revocations.
func (s *Store) Sessions() Sessions { return Sessions{s.core} }

// Revoke records that session id is ended until until (its expiry), and
// drops the revocations whose sessions have expired by now, in one round
// trip.
func (s Sessions) Revoke(ctx context.Context, id string, until, now time.Time) error {
	pipe := s.rdb.TxPipeline()
	pipe.ZRemRangeByScore(ctx, s.keys.revokedSessions(), "-inf", strconv.FormatInt(now.Unix(), 10))
	pipe.ZAdd(ctx, s.keys.revokedSessions(), redis.Z{Score: float64(until.Unix()), Member: id})
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("revoke session: %w", err)
	}
	return nil
}

// Revoked reports whether session id was revoked (and its revocation has
// not expired by now).
func (s Sessions) Revoked(ctx context.Context, id string, now time.Time) (bool, error) {
	until, err := s.rdb.ZScore(ctx, s.keys.revokedSessions(), id).Result()
	if err == redis.Nil {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read session revocation: %w", err)
	}
	return int64(until) > now.Unix(), nil
}

// RevokedSessionsFull reports whether MaxRevokedSessions revocations are
// live at now (expired ones are dropped first).
func (s Sessions) RevokedSessionsFull(ctx context.Context, now time.Time) (bool, error) {
	pipe := s.rdb.TxPipeline()
	pipe.ZRemRangeByScore(ctx, s.keys.revokedSessions(), "-inf", strconv.FormatInt(now.Unix(), 10))
	n := pipe.ZCard(ctx, s.keys.revokedSessions())
	if _, err := pipe.Exec(ctx); err != nil {
		return false, fmt.Errorf("count session revocations: %w", err)
	}
	return n.Val() >= MaxRevokedSessions, nil
}
