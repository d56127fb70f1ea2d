package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

// ScheduleStore keeps schedule entries in Redis, in the layout of
// docs/scheduler.md: the ZSET <prefix>:schedule (entry name → next due time
// in Unix seconds; 0 = to be planned, +inf = parked) and one HASH
// <prefix>:sched:<name> per entry (fields definition and meta, JSON). It
// implements scheduler.Store (the leader loop) and scheduler.Catalog (the
// management API). Every loop operation touches only the entries involved.
// It is safe for concurrent use.
type ScheduleStore struct {
	rdb  redis.UniversalClient
	keys *keyspace
}

// Schedules returns the schedule entries kept under the Store's prefix.
func (s *Store) Schedules() *ScheduleStore { return &ScheduleStore{rdb: s.rdb, keys: &s.keys} }

// formatScore writes a score for a Redis argument: exact for finite values
// (shortest representation that reads back to the same double), "+inf" and
// "-inf" otherwise.
func formatScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// unixScore is t in Unix seconds, with its fraction.
func unixScore(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// DueSchedules implements scheduler.Store: ZRANGEBYSCORE -inf until LIMIT
// 0 limit, then the entries' hashes in one pipeline.
func (st *ScheduleStore) DueSchedules(ctx context.Context, until time.Time, limit int) ([]drover.ScheduleRecord, error) {
	zs, err := st.rdb.ZRangeByScoreWithScores(ctx, st.keys.scheduleIndex(), &redis.ZRangeBy{
		Min: "-inf", Max: formatScore(unixScore(until)), Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("read due schedule entries: %w", err)
	}
	return st.withHashes(ctx, zs)
}

// withHashes loads the definition and meta of every index member in zs.
func (st *ScheduleStore) withHashes(ctx context.Context, zs []redis.Z) ([]drover.ScheduleRecord, error) {
	if len(zs) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.SliceCmd, len(zs))
	_, err := st.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, z := range zs {
			cmds[i] = p.HMGet(ctx, st.keys.scheduleEntry(z.Member.(string)), "definition", "meta")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read schedule entries: %w", err)
	}
	recs := make([]drover.ScheduleRecord, len(zs))
	for i, z := range zs {
		vals := cmds[i].Val()
		recs[i] = drover.ScheduleRecord{Name: z.Member.(string), Score: z.Score,
			Definition: bytesOf(vals[0]), Meta: bytesOf(vals[1])}
	}
	return recs, nil
}

// bytesOf converts an HMGET value (string or nil) to bytes.
func bytesOf(v any) []byte {
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	return nil
}

// NextScheduleDue implements scheduler.Store: the lowest score in (after,
// +inf), so parked entries never count.
func (st *ScheduleStore) NextScheduleDue(ctx context.Context, after time.Time) (time.Time, bool, error) {
	zs, err := st.rdb.ZRangeByScoreWithScores(ctx, st.keys.scheduleIndex(), &redis.ZRangeBy{
		Min: "(" + formatScore(unixScore(after)), Max: "(+inf", Count: 1,
	}).Result()
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read next schedule due: %w", err)
	}
	if len(zs) == 0 {
		return time.Time{}, false, nil
	}
	sec, frac := math.Modf(zs[0].Score)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true, nil
}

// AdvanceSchedule implements scheduler.Store with scheduleAdvanceScript.
func (st *ScheduleStore) AdvanceSchedule(ctx context.Context, name string, from, to float64) (bool, error) {
	n, err := scheduleAdvanceScript.Run(ctx, st.rdb, []string{st.keys.scheduleIndex()},
		name, formatScore(from), formatScore(to)).Int()
	if err != nil {
		return false, fmt.Errorf("advance schedule entry %s: %w", name, err)
	}
	return n == 1, nil
}

// RecordScheduleFires implements scheduler.Store with scheduleRecordScript.
func (st *ScheduleStore) RecordScheduleFires(ctx context.Context, name string, fires int, lastSlot, ranAt time.Time) error {
	err := scheduleRecordScript.Run(ctx, st.rdb, []string{st.keys.scheduleEntry(name)},
		fires, lastSlot.Unix(), ranAt.UTC().Format(time.RFC3339Nano)).Err()
	if err != nil {
		return fmt.Errorf("record fires of schedule entry %s: %w", name, err)
	}
	return nil
}

// CreateSchedule implements scheduler.Catalog. It claims the name in the
// index parked (ZADD NX +inf: no scheduler reads it yet), writes the
// definition, then sets the score to 0 so the leader plans it. A crash in
// between leaves a parked entry that List shows.
func (st *ScheduleStore) CreateSchedule(ctx context.Context, name string, definition []byte) error {
	added, err := st.rdb.ZAddNX(ctx, st.keys.scheduleIndex(), redis.Z{Score: math.Inf(1), Member: name}).Result()
	if err != nil {
		return fmt.Errorf("claim schedule name %s: %w", name, err)
	}
	if added == 0 {
		return drover.ErrScheduleExists
	}
	return st.writeDefinition(ctx, name, definition)
}

// writeDefinition writes the definition, then gives the entry score 0 (if
// it is still in the index).
func (st *ScheduleStore) writeDefinition(ctx context.Context, name string, definition []byte) error {
	if err := st.rdb.HSet(ctx, st.keys.scheduleEntry(name), "definition", definition).Err(); err != nil {
		return fmt.Errorf("write definition of schedule entry %s: %w", name, err)
	}
	err := st.rdb.ZAddXX(ctx, st.keys.scheduleIndex(), redis.Z{Score: drover.SchedulePlan, Member: name}).Err()
	if err != nil {
		return fmt.Errorf("mark schedule entry %s for planning: %w", name, err)
	}
	return nil
}

// ReplaceSchedule implements scheduler.Catalog.
func (st *ScheduleStore) ReplaceSchedule(ctx context.Context, name string, definition []byte) error {
	if _, err := st.rdb.ZScore(ctx, st.keys.scheduleIndex(), name).Result(); err != nil {
		if errors.Is(err, redis.Nil) {
			return drover.ErrNotFound
		}
		return fmt.Errorf("look up schedule entry %s: %w", name, err)
	}
	return st.writeDefinition(ctx, name, definition)
}

// DeleteSchedule implements scheduler.Catalog: ZREM from the index first
// (the leader stops seeing it), then DEL the hash.
func (st *ScheduleStore) DeleteSchedule(ctx context.Context, name string) error {
	n, err := st.rdb.ZRem(ctx, st.keys.scheduleIndex(), name).Result()
	if err != nil {
		return fmt.Errorf("remove schedule entry %s from the index: %w", name, err)
	}
	if err := st.rdb.Del(ctx, st.keys.scheduleEntry(name)).Err(); err != nil {
		return fmt.Errorf("delete schedule entry %s: %w", name, err)
	}
	if n == 0 {
		return drover.ErrNotFound
	}
	return nil
}

// GetSchedule implements scheduler.Catalog.
func (st *ScheduleStore) GetSchedule(ctx context.Context, name string) (drover.ScheduleRecord, error) {
	score, err := st.rdb.ZScore(ctx, st.keys.scheduleIndex(), name).Result()
	if errors.Is(err, redis.Nil) {
		return drover.ScheduleRecord{}, drover.ErrNotFound
	}
	if err != nil {
		return drover.ScheduleRecord{}, fmt.Errorf("look up schedule entry %s: %w", name, err)
	}
	recs, err := st.withHashes(ctx, []redis.Z{{Score: score, Member: name}})
	if err != nil {
		return drover.ScheduleRecord{}, err
	}
	return recs[0], nil
}

// listChunk is how many index members ListSchedules reads per round trip.
const listChunk = 1000

// ListSchedules implements scheduler.Catalog. It walks the whole index (an
// admin operation, O(all entries)) in chunks of listChunk; an entry added
// or moved during the walk may be missed or listed twice, and is then
// listed once.
func (st *ScheduleStore) ListSchedules(ctx context.Context) ([]drover.ScheduleRecord, error) {
	var all []drover.ScheduleRecord
	seen := make(map[string]bool)
	for start := int64(0); ; start += listChunk {
		zs, err := st.rdb.ZRangeWithScores(ctx, st.keys.scheduleIndex(), start, start+listChunk-1).Result()
		if err != nil {
			return nil, fmt.Errorf("list schedule entries: %w", err)
		}
		recs, err := st.withHashes(ctx, zs)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if !seen[r.Name] {
				seen[r.Name] = true
				all = append(all, r)
			}
		}
		if len(zs) < listChunk {
			break
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all, nil
}
