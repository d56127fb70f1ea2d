package queue

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

var _ = addContractCases(
	contractCase{"TrimAndLag", testTrimAndLag},
	contractCase{"TrimRetention", testTrimRetention},
	contractCase{"Positions", testPositions},
)

// zcountAfter is the reference lag: ZCOUNT log (offset +inf.
func zcountAfter(t *testing.T, rdb redis.UniversalClient, key string, offset drover.Position) int64 {
	t.Helper()
	n, err := rdb.ZCount(context.Background(), key, "("+strconv.FormatInt(int64(offset), 10), "+inf").Result()
	if err != nil {
		t.Fatalf("ZCOUNT %s: %v", key, err)
	}
	return n
}

// Trim removes exactly the entries at or below the offset, and Backlog's lag
// agrees with ZCOUNT before and after.
func testTrimAndLag(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	msgs := make([]*drover.Message, 2500) // more than one trim chunk
	for i := range msgs {
		msgs[i] = msg("trim", "")
	}
	res, err := s.Producer().EnqueueBatch(ctx, msgs)
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	qk := s.keys.queue("trim")
	offset := res[2199].Position
	for _, off := range []drover.Position{0, res[0].Position, offset, res[2499].Position} {
		b, err := s.Log().Backlog(ctx, "trim", off)
		if err != nil {
			t.Fatalf("Backlog(%d): %v", off, err)
		}
		if want := zcountAfter(t, rdb, qk.log, off); b.Lag != want {
			t.Fatalf("Backlog(%d).Lag = %d, ZCOUNT says %d", off, b.Lag, want)
		}
		if b.Lag > 0 && (b.Oldest <= off || b.OldestAge < 0) {
			t.Fatalf("Backlog(%d): oldest %d (age %s) must follow the offset", off, b.Oldest, b.OldestAge)
		}
		if b.Lag == 0 && (b.Oldest != 0 || b.OldestAge != 0) {
			t.Fatalf("Backlog(%d) with no lag: want no oldest, have %+v", off, b)
		}
	}
	if b, _ := s.Log().Backlog(ctx, "trim", offset); b.Lag != 300 || b.Oldest != res[2200].Position {
		t.Fatalf("Backlog after message 2200: want lag 300 from %d, have %+v", res[2200].Position, b)
	}

	n, err := s.Log().Trim(ctx, "trim", offset, 0)
	if err != nil || n != 2200 {
		t.Fatalf("Trim(%d): want 2200 removed, have %d, %v", offset, n, err)
	}
	if c, _ := rdb.ZCard(ctx, qk.log).Result(); c != 300 {
		t.Fatalf("log after trim: want 300, have %d", c)
	}
	if c, _ := rdb.HLen(ctx, qk.msg).Result(); c != 300 {
		t.Fatalf(":msg after trim: want 300, have %d", c)
	}
	for _, off := range []drover.Position{0, offset} {
		if b, _ := s.Log().Backlog(ctx, "trim", off); b.Lag != 300 || b.Lag != zcountAfter(t, rdb, qk.log, off) {
			t.Fatalf("Backlog(%d) after trim: want lag 300 = ZCOUNT, have %+v", off, b)
		}
	}
	if es := readAll(t, s, "trim", 0, 1000); len(es) != 300 || es[0].ID != res[2200].ID {
		t.Fatalf("after trim: want the last 300 messages from %s, have %d", res[2200].ID, len(es))
	}
	if n, err := s.Log().Trim(ctx, "trim", offset, 0); err != nil || n != 0 {
		t.Fatalf("Trim again: want 0, have %d, %v", n, err)
	}
}

// With a retention window, Trim removes only entries older than the window,
// and never above the offset.
func testTrimRetention(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	qk := s.keys.queue("keep")
	// Two entries from three hours ago, written by hand.
	old := drover.Position(time.Now().Add(-3 * time.Hour).UnixMicro())
	for i, id := range []string{"old-1", "old-2"} {
		rdb.ZAdd(ctx, qk.log, redis.Z{Score: float64(old) + float64(i), Member: id})
		rdb.HSet(ctx, qk.msg, id, `{"id":"`+id+`","task":"t"}`)
	}
	fresh := mustEnqueue(t, s, msg("keep", "fresh"))

	if n, err := s.Log().Trim(ctx, "keep", old, 2*time.Hour); err != nil || n != 1 {
		t.Fatalf("Trim(old-1, 2h): want old-1 removed, have %d, %v", n, err)
	}
	if n, err := s.Log().Trim(ctx, "keep", fresh.Position, 2*time.Hour); err != nil || n != 1 {
		t.Fatalf("Trim(fresh, 2h): want old-2 removed, have %d, %v", n, err)
	}
	es := readAll(t, s, "keep", 0, 10)
	if len(es) != 1 || es[0].ID != "fresh" {
		t.Fatalf("after retention trims: want fresh kept, have %+v", es)
	}
	if ok, _ := rdb.HExists(ctx, qk.msg, "old-2").Result(); ok {
		t.Fatalf("old-2's envelope survived the trim")
	}
	if n, err := s.Log().Trim(ctx, "keep", fresh.Position, 0); err != nil || n != 1 {
		t.Fatalf("Trim(fresh) without retention: want 1, have %d, %v", n, err)
	}
}

// FirstPosition, LastPosition and PositionAt for offset resets.
func testPositions(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	if _, err := s.Inspector().FirstPosition(ctx, "pos"); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("FirstPosition of an empty log: want ErrNotFound, have %v", err)
	}
	if _, err := s.Inspector().LastPosition(ctx, "pos"); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("LastPosition of an empty log: want ErrNotFound, have %v", err)
	}
	var ps []drover.Position
	for range 5 {
		ps = append(ps, mustEnqueue(t, s, msg("pos", "")).Position)
	}
	if p, err := s.Inspector().FirstPosition(ctx, "pos"); err != nil || p != ps[0] {
		t.Fatalf("FirstPosition: want %d, have %d, %v", ps[0], p, err)
	}
	if p, err := s.Inspector().LastPosition(ctx, "pos"); err != nil || p != ps[4] {
		t.Fatalf("LastPosition: want %d, have %d, %v", ps[4], p, err)
	}
	if p, err := s.Inspector().PositionAt(ctx, "pos", time.UnixMicro(int64(ps[2]))); err != nil || p != ps[1] {
		t.Fatalf("PositionAt(time of #2): want #1 = %d, have %d, %v", ps[1], p, err)
	}
	if p, err := s.Inspector().PositionAt(ctx, "pos", time.UnixMicro(int64(ps[4])+1)); err != nil || p != ps[4] {
		t.Fatalf("PositionAt(after #4): want %d, have %d, %v", ps[4], p, err)
	}
	if _, err := s.Inspector().PositionAt(ctx, "pos", time.UnixMicro(int64(ps[0]))); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("PositionAt(time of #0): want ErrNotFound, have %v", err)
	}
}
