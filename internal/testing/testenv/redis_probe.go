package testenv

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
)

// RedisProbe looks at a test Redis's keys and counters for the tests of
// packages that see no Redis client of their own (worker: DESIGN.md §2
// keeps go-redis in queue): it answers in plain Go types, and Client gives
// the client to build a queue.Store on.
type RedisProbe struct{ c *redis.Client }

// NewRedisProbe connects to the Redis at addr until the test ends.
func NewRedisProbe(t testing.TB, addr string) RedisProbe {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return RedisProbe{c: c}
}

// Client is the probe's client, for queue.Config.Client.
func (p RedisProbe) Client() redis.UniversalClient { return p.c }

// HGetInt reads an integer field of a hash; ok is false when it is absent.
func (p RedisProbe) HGetInt(ctx context.Context, key, field string) (n int, ok bool, err error) {
	n, err = p.c.HGet(ctx, key, field).Int()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	return n, err == nil, err
}

// HLen is the number of fields of a hash.
func (p RedisProbe) HLen(ctx context.Context, key string) (int64, error) {
	return p.c.HLen(ctx, key).Result()
}

// Type is a key's type ("none" when it does not exist).
func (p RedisProbe) Type(ctx context.Context, key string) (string, error) {
	return p.c.Type(ctx, key).Result()
}

// ResetStats resets the server's INFO counters (CONFIG RESETSTAT).
func (p RedisProbe) ResetStats(ctx context.Context) error { return p.c.ConfigResetStat(ctx).Err() }

// Info is the server's INFO section.
func (p RedisProbe) Info(ctx context.Context, section string) (string, error) {
	return p.c.Info(ctx, section).Result()
}
