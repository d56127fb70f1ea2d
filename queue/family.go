package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// What the rebalance leader's family registrar needs of Redis
// (docs/decisions.md, "Queue families (issue 31)"): the wake-ups of queues
// no member owns (every first enqueue to a queue publishes one), a slow
// scan of the queues holding messages (the backstop for a lost wake-up),
// and the retire of a queue that stayed empty and idle.

// UnownedWakeups subscribes to the channel of queues no member owns (the
// enqueue script publishes there when a queue has no :owner route: the
// first enqueue to a queue, or to a retired one) and returns a channel of
// wake-ups, closed after ctx ends. As with Wakeups, they are hints: a
// Wakeup with Missed set says some may have been lost.
func (s Families) UnownedWakeups(ctx context.Context) (<-chan Wakeup, error) {
	return s.subscribeWakeups(ctx, s.keys.unownedChannel())
}

// ScanStep is one step of ScanQueuesWithMessages.
type ScanStep struct {
	Queues []string // queues holding pending or delayed messages
	Cursor uint64   // the cursor of the next step; 0: the scan is complete
}

// ScanQueuesWithMessages takes one step of a SCAN over the :msg keys (the
// envelopes of a queue's pending and delayed messages: the key exists while
// the queue holds any), examining about count keys, from cursor (0 to
// begin). A full scan costs the server one pass over its keyspace, spread
// over the steps; the caller paces them. On a Redis Cluster a pass walks
// every master, one after the other (in the order of their addresses): the
// cursor names the master in its top 8 bits (scanNodeShift) and that
// master's own SCAN cursor in the rest, so a step still examines about
// count keys of one master and the caller's one cursor covers them all.
// A master added or removed during a pass may be missed or walked twice by
// it; the next pass covers it.
func (s Families) ScanQueuesWithMessages(ctx context.Context, cursor uint64, count int64) (ScanStep, error) {
	pattern := s.keys.prefix + ":{*}:msg"
	node, nodeCursor := cursor>>scanNodeShift, cursor&(1<<scanNodeShift-1)
	var keys []string
	var next uint64
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		masters, err := clusterMasters(ctx, cc)
		if err != nil {
			return ScanStep{}, fmt.Errorf("scan queues with messages: %w", err)
		}
		if node >= uint64(len(masters)) {
			return ScanStep{}, nil // the masters shrank: the pass is over
		}
		keys, next, err = masters[node].ScanType(ctx, nodeCursor, pattern, count, "hash").Result()
		if err != nil {
			return ScanStep{}, fmt.Errorf("scan queues with messages on %s: %w", masters[node].Options().Addr, err)
		}
		if next >= 1<<scanNodeShift {
			return ScanStep{}, fmt.Errorf("scan queues with messages on %s: cursor %d does not fit in %d bits", masters[node].Options().Addr, next, scanNodeShift)
		}
		if next == 0 && node+1 < uint64(len(masters)) {
			next = (node + 1) << scanNodeShift // this master done: the next one
		} else if next != 0 {
			next |= node << scanNodeShift
		}
	} else {
		var err error
		keys, next, err = s.rdb.ScanType(ctx, cursor, pattern, count, "hash").Result()
		if err != nil {
			return ScanStep{}, fmt.Errorf("scan queues with messages: %w", err)
		}
	}
	step := ScanStep{Cursor: next}
	head := s.keys.prefix + ":{"
	for _, k := range keys {
		rest, ok := strings.CutPrefix(k, head)
		if !ok {
			continue
		}
		q, ok := strings.CutSuffix(rest, "}:msg")
		if !ok || strings.ContainsAny(q, "{}") {
			continue
		}
		step.Queues = append(step.Queues, q)
	}
	return step, nil
}

// scanNodeShift is where ScanQueuesWithMessages keeps the master's index in
// a Redis Cluster cursor: a master's own SCAN cursor has as many bits as its
// hash table's size (2^56 slots is far beyond any server's memory).
const scanNodeShift = 56

// clusterMasters returns a client of every master of the cluster, in the
// order of their addresses, from the client's cached view of the cluster
// (no request).
func clusterMasters(ctx context.Context, cc *redis.ClusterClient) ([]*redis.Client, error) {
	var mu sync.Mutex
	var out []*redis.Client
	err := cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		out = append(out, c)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the cluster's masters: %w", err)
	}
	if len(out) > 1<<(64-scanNodeShift) {
		return nil, fmt.Errorf("list the cluster's masters: %d masters, more than a scan cursor names", len(out))
	}
	slices.SortFunc(out, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
	return out, nil
}

// EmptiedQueue is an entry of the retire index: a queue whose log a trim
// emptied at At (or, after a retire script kept it, the time from which
// its idleness is counted again).
type EmptiedQueue struct {
	Queue string
	At    time.Time
}

// RetireCandidates returns up to n entries of the retire index whose time
// is at or before before, oldest first: the queues a trim emptied (and no
// retire script has found busy since), which the family retire sweep
// checks instead of walking every registered queue (docs/decisions.md,
// "Issue 40: the retire sweep visits the emptied queues"). On a Redis
// Cluster there is no index (it would be in another slot than the
// queues): it returns none, and the sweep's backstop finds the idle
// queues. One ZRANGE.
func (s Families) RetireCandidates(ctx context.Context, before time.Time, n int) ([]EmptiedQueue, error) {
	if s.cluster() || n <= 0 {
		return nil, nil
	}
	zs, err := s.rdb.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{
		Key: s.keys.retireIndex(), Start: "-inf", Stop: formatInt(before.UnixMilli()), ByScore: true, Count: int64(n),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("read the retire index: %w", err)
	}
	out := make([]EmptiedQueue, len(zs))
	for i, z := range zs {
		q, _ := z.Member.(string)
		out[i] = EmptiedQueue{Queue: q, At: time.UnixMilli(int64(z.Score))}
	}
	return out, nil
}

// TidyRetireIndex removes the entries of drop from the retire index (the
// sweep will not retire them: no family that retires matches them, or
// they are not registered) and moves those of later to their new time,
// only later than the entry's (a trim that emptied the queue meanwhile
// keeps its newer time) and only if the entry is still there. One
// pipeline; nothing on a Redis Cluster.
func (s Families) TidyRetireIndex(ctx context.Context, drop []string, later []EmptiedQueue) error {
	if s.cluster() || len(drop)+len(later) == 0 {
		return nil
	}
	pipe := s.rdb.Pipeline()
	if len(drop) > 0 {
		members := make([]any, len(drop))
		for i, q := range drop {
			members[i] = q
		}
		pipe.ZRem(ctx, s.keys.retireIndex(), members...)
	}
	for _, e := range later {
		pipe.ZAddArgs(ctx, s.keys.retireIndex(), redis.ZAddArgs{XX: true, GT: true, Members: []redis.Z{{Score: float64(e.At.UnixMilli()), Member: e.Queue}}})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("tidy the retire index (%d dropped, %d postponed): %w", len(drop), len(later), err)
	}
	return nil
}

// QueueIdleness is what the retire script found of one queue.
type QueueIdleness int

// The answers of CheckIdle and Retire.
const (
	// QueueBusy: the queue holds pending or delayed messages.
	QueueBusy QueueIdleness = iota
	// QueueKept: empty, but enqueued to within the idle time, holding
	// dead letters (an operator's to look at), or holding caller-chosen
	// ids still inside their dedupe window (an enqueue of one of them must
	// stay a no-op).
	QueueKept
	// QueueIdle: empty and idle past the cutoff; Retire deleted every key
	// of the queue and its entry in the queue registry SET.
	QueueIdle
)

// CheckIdle reports, for each queue, whether it is busy, kept or idle
// since before cutoff (its last enqueue, from its :seq key, is older),
// in one pipeline. It changes nothing but the :seq of a queue that has
// none and the queue's entry in the retire index (see retireSource).
func (s Families) CheckIdle(ctx context.Context, queues []string, cutoff time.Time) ([]QueueIdleness, error) {
	if len(queues) == 0 {
		return nil, nil
	}
	calls := make([]*scriptCall, len(queues))
	for i, q := range queues {
		qk, err := s.queueKeys(q)
		if err != nil {
			return nil, fmt.Errorf("check idle: %w", err)
		}
		calls[i] = &scriptCall{queues: []string{q}, keys: s.retireKeys(qk), args: []any{cutoff.UnixMicro(), "check", q}}
	}
	s.evalPipelined(ctx, retireScript, calls)
	out := make([]QueueIdleness, len(queues))
	for i, c := range calls {
		n, err := c.cmd.Int()
		if err != nil {
			return nil, fmt.Errorf("check idle of %s: %w", queues[i], err)
		}
		out[i] = QueueIdleness(n)
	}
	return out, nil
}

// Retire deletes every key of queue, and its entry in the queue registry
// SET (drover:queues), when the queue is empty (no pending, delayed or dead
// message, no caller-chosen id inside its dedupe window) and its last
// enqueue is older than cutoff, atomically with the check: an enqueue is
// either before it (and the queue is not retired) or after it (and it
// finds no route, so its wake-up goes to the unowned channel, where the
// registrar hears it, and no :seq, so it starts the queue anew). It
// reports what it found; QueueIdle means it retired the keys. It is
// RetireMany of one.
func (s Families) Retire(ctx context.Context, queue string, cutoff time.Time) (QueueIdleness, error) {
	st, err := s.RetireMany(ctx, []string{queue}, cutoff)
	if len(st) == 0 {
		return QueueBusy, err
	}
	return st[0], err
}

// RetireMany is Retire for many queues: the retire script of every queue
// goes in one pipeline (one round trip; a second only for the scripts a
// restarted server does not know yet), each script as atomic as Retire's.
// It returns what it found of each queue, in order. A queue whose script
// failed (or whose reply was lost) is reported QueueBusy (not retired;
// after a lost reply its keys may be gone) and the returned error names
// it; the others' answers hold even then.
//
// On a Redis Cluster the registry SET lives in another slot than the
// queues, so the scripts cannot touch it (docs/decisions.md, "Issue 40:
// retired keys leave no ghosts"): the entries of the queues found idle go
// after the scripts (one SREM), then those queues are looked at again
// (one pipeline) and the entry of each that a message came in to
// meanwhile is added back (one SADD). A queue whose entry could not be
// removed, or whose second look failed, is reported QueueBusy with an
// error, its entry left or added back: a live queue's entry is never left
// out.
func (s Families) RetireMany(ctx context.Context, queues []string, cutoff time.Time) ([]QueueIdleness, error) {
	out := make([]QueueIdleness, len(queues))
	if len(queues) == 0 {
		return out, nil
	}
	keys := make([]*queueKeys, len(queues))
	calls := make([]*scriptCall, 0, len(queues))
	at := make([]int, 0, len(queues)) // calls[k] is queues[at[k]]
	var errs []error
	for i, q := range queues {
		qk, err := s.queueKeys(q)
		if err != nil {
			errs = append(errs, fmt.Errorf("retire: %w", err))
			continue
		}
		keys[i] = qk
		calls = append(calls, &scriptCall{queues: []string{q}, keys: s.retireKeys(qk), args: []any{cutoff.UnixMicro(), "retire", q}})
		at = append(at, i)
	}
	s.evalPipelined(ctx, retireScript, calls)
	var idle []int // indices into queues
	for k, c := range calls {
		i := at[k]
		n, err := c.cmd.Int()
		if err != nil {
			errs = append(errs, fmt.Errorf("retire %s: %w", queues[i], err))
			continue
		}
		out[i] = QueueIdleness(n)
		if out[i] == QueueIdle {
			idle = append(idle, i)
		}
	}
	if len(idle) > 0 && s.cluster() {
		errs = append(errs, s.unlistRetired(ctx, queues, keys, idle, out))
	}
	return out, errors.Join(errs...)
}

// unlistRetired removes the queues at idle (retired by their scripts) from
// the queue registry SET on a Redis Cluster, then adds back the entry of
// each holding a message again (RetireMany). A queue it cannot settle is
// set QueueBusy in out.
func (s Families) unlistRetired(ctx context.Context, queues []string, keys []*queueKeys, idle []int, out []QueueIdleness) error {
	members := make([]any, len(idle))
	for k, i := range idle {
		members[k] = queues[i]
	}
	if err := s.rdb.SRem(ctx, s.keys.queues(), members...).Err(); err != nil {
		for _, i := range idle {
			out[i] = QueueBusy
		}
		return fmt.Errorf("retire %d queues: remove them from %s: %w", len(idle), s.keys.queues(), err)
	}
	pipe := s.rdb.Pipeline()
	exists := make([]*redis.IntCmd, len(idle))
	for k, i := range idle {
		qk := keys[i]
		exists[k] = pipe.Exists(ctx, qk.log, qk.msg, qk.delayed, qk.seq)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command
	var back []any
	var errs []error
	for k, i := range idle {
		live, err := exists[k].Result()
		if err != nil || live > 0 {
			// A message came in after the script (or the look failed): the
			// queue is not gone, nor is its entry.
			back = append(back, queues[i])
		}
		if err != nil {
			out[i] = QueueBusy
			errs = append(errs, fmt.Errorf("retire %s: look at it again: %w", queues[i], err))
		}
	}
	if len(back) > 0 {
		if err := s.rdb.SAdd(ctx, s.keys.queues(), back...).Err(); err != nil {
			for _, q := range back {
				i := idle[slices.Index(members, q)]
				out[i] = QueueBusy
			}
			errs = append(errs, fmt.Errorf("retire: add %d queues back to %s: %w", len(back), s.keys.queues(), err))
		}
	}
	return errors.Join(errs...)
}

// AddQueueNames adds queues to the queue registry SET (drover:queues), as
// a producer's first enqueue to each does: the registrar calls it for the
// queues it registers, so that a queue enqueued to again after it retired
// is listed there even when its producer remembers having added it
// before (Store's known queues).
func (s Families) AddQueueNames(ctx context.Context, queues []string) error {
	if len(queues) == 0 {
		return nil
	}
	members := make([]any, len(queues))
	for i, q := range queues {
		members[i] = q
	}
	if err := s.rdb.SAdd(ctx, s.keys.queues(), members...).Err(); err != nil {
		return fmt.Errorf("add %d queues to %s: %w", len(queues), s.keys.queues(), err)
	}
	return nil
}

// HasMessages reports whether queue holds pending or delayed messages.
func (s Families) HasMessages(ctx context.Context, queue string) (bool, error) {
	busy, err := s.HasMessagesMany(ctx, []string{queue})
	return len(busy) == 1 && busy[0], err
}

// HasMessagesMany reports, for each queue in order, whether it holds
// pending or delayed messages, in one pipeline. A queue whose look failed
// is reported true (holding messages, as far as the caller may assume),
// and the error names it.
func (s Families) HasMessagesMany(ctx context.Context, queues []string) ([]bool, error) {
	out := make([]bool, len(queues))
	calls := make([]*scriptCall, 0, len(queues))
	at := make([]int, 0, len(queues))
	var errs []error
	for i, q := range queues {
		qk, err := s.queueKeys(q)
		if err != nil {
			out[i] = true
			errs = append(errs, fmt.Errorf("has messages: %w", err))
			continue
		}
		calls = append(calls, &scriptCall{queues: []string{q}, keys: retireKeys(qk), args: []any{0, "peek", q}})
		at = append(at, i)
	}
	s.evalPipelined(ctx, retireScript, calls)
	for k, c := range calls {
		i := at[k]
		n, err := c.cmd.Int()
		if err != nil {
			out[i] = true
			errs = append(errs, fmt.Errorf("has messages of %s: %w", queues[i], err))
			continue
		}
		out[i] = QueueIdleness(n) == QueueBusy
	}
	return out, errors.Join(errs...)
}

// retireKeys are the KEYS of retireSource without the registry SET and
// the retire index.
func retireKeys(qk *queueKeys) []string {
	return []string{qk.log, qk.delayed, qk.dead, qk.seq, qk.owner, qk.msg, qk.deadmsg, qk.seen, qk.done, qk.attempts, qk.family}
}

// retireKeys are the KEYS of a check or a retire: with the registry SET,
// the retire index and the family counts, except on a Redis Cluster
// (another slot: RetireMany removes the SET entry after the script, and
// neither the index nor the counts are kept).
func (s Families) retireKeys(qk *queueKeys) []string {
	keys := retireKeys(qk)
	if !s.cluster() {
		keys = append(keys, s.keys.queues(), s.keys.retireIndex(), s.keys.familyQueues())
	}
	return keys
}

// retireSource checks whether one queue is empty and idle and, asked to,
// retires it: deletes every key of the queue (docs/redis-schema.md,
// "Retiring a queue of a family"), so that a retired queue leaves nothing.
// With the retire index it also keeps the queue's entry there true
// (docs/decisions.md, "Issue 40: the retire sweep visits the emptied
// queues"): a busy queue leaves it (the trim that empties its log adds it
// again), a kept one is scored so that the sweep, which takes the entries
// whose score is retire_after old, looks again when it may retire, and a
// retired one leaves it.
//
//	KEYS[1] log  KEYS[2] delayed  KEYS[3] dead  KEYS[4] seq  KEYS[5] owner
//	KEYS[6] msg  KEYS[7] deadmsg  KEYS[8] seen  KEYS[9] done (the outcome
//	record buckets' index; the buckets are <done>:<bucket>)
//	KEYS[10] attempts (the starts recorded of its messages)
//	KEYS[11] family (the family whose bound admitted the queue, if any:
//	         enqueueAdmittedSource)
//	KEYS[12] the queue registry SET (drover:queues), only where one script
//	         may touch it beside the queue's keys (not on a Redis Cluster)
//	KEYS[13] the retire index (drover:retire-index), likewise (optional)
//	KEYS[14] the family counts HASH (drover:family-queues), likewise: a
//	         retired queue admitted by a family's bound gives its room back
//	ARGV[1] the cutoff, unix µs: idle when the last position (:seq) is at
//	        or before it; a queue without :seq (registered, never given a
//	        position) gets one now, as an enqueue would, and is idle from
//	        now on
//	ARGV[2] "peek" (only whether the queue holds messages: 0 or 1),
//	        "check" (change nothing but a missing :seq and the queue's
//	        index entry) or "retire" (delete the keys of an idle queue and,
//	        with KEYS[12] to KEYS[14], its entries there)
//	ARGV[3] the queue's name (its member of KEYS[12] and KEYS[13])
//
// Returns 0 when the queue holds pending or delayed messages, 1 when it is
// empty but enqueued to after the cutoff, holds dead letters or holds
// caller-chosen ids inside their dedupe window, 2 when it is empty and
// idle (and, with "retire", its keys are gone).
const retireSource = `-- drover retire v4
local index = KEYS[13]
if redis.call('ZCARD', KEYS[1]) > 0 or redis.call('ZCARD', KEYS[2]) > 0 then
  -- busy: the trim that empties its log adds it to the index again
  if index and ARGV[2] ~= 'peek' then redis.call('ZREM', index, ARGV[3]) end
  return 0
end
if ARGV[2] == 'peek' then return 1 end
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- kept: the index entry is scored so that the sweep, which takes entries
-- retire_after old (retire_after is now - cutoff), looks again when the queue
-- may retire (the queue is empty now: a later trim that empties it scores it anew)
local cutoff_ms = math.floor(tonumber(ARGV[1]) / 1000)
local function kept(score)
  if index then redis.call('ZADD', index, math.max(score, 0), ARGV[3]) end
  return 1
end
if redis.call('ZCARD', KEYS[3]) > 0 then return kept(now_ms) end
local last = redis.call('GET', KEYS[4])
if not last then
  -- never enqueued to with a position: its idle time starts now
  redis.call('SET', KEYS[4], tonumber(t[1]) * 1000000 + tonumber(t[2]))
  return kept(now_ms)
end
if tonumber(last) > tonumber(ARGV[1]) then return kept(math.floor(tonumber(last) / 1000)) end
-- an id inside its dedupe window keeps the queue: enqueueing it again must stay a no-op
local seen = redis.call('ZRANGE', KEYS[8], -1, -1, 'WITHSCORES')
if #seen > 0 and tonumber(seen[2]) > now_ms then return kept(tonumber(seen[2]) - (now_ms - cutoff_ms)) end
if ARGV[2] == 'retire' then
  local buckets = redis.call('ZRANGE', KEYS[9], 0, -1)
  for i = 1, #buckets do redis.call('UNLINK', KEYS[9] .. ':' .. buckets[i]) end
  local family = redis.call('GET', KEYS[11])
  redis.call('UNLINK', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11])
  if KEYS[12] then redis.call('SREM', KEYS[12], ARGV[3]) end
  if index then redis.call('ZREM', index, ARGV[3]) end
  if family and KEYS[14] and redis.call('HINCRBY', KEYS[14], family, -1) <= 0 then redis.call('HDEL', KEYS[14], family) end
end
return 2
`

var retireScript = redis.NewScript(retireSource)
