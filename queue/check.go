package queue

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// checkGroup is the most queues one check script call covers on a
// standalone server (on a Cluster a call covers queues of one slot).
const checkGroup = 256

// QueueCheck is what CheckQueues found for one queue.
type QueueCheck = drover.QueueCheck

// CheckQueues reports, for each of queues, whether a message waits after
// its offset (offsets[i] is the committed or fetched offset of queues[i]),
// whether the log still holds messages at or before it, and when its
// earliest delayed message is due. It is the owner's amortised
// backstop against lost wake-ups (DESIGN.md §10): one script call per 256
// queues on a standalone server, per slot on a Cluster, all in one pipeline
// — not a poll per queue. The checks are in the order of queues.
func (s Log) CheckQueues(ctx context.Context, queues []string, offsets []drover.Position) ([]QueueCheck, error) {
	if len(offsets) != len(queues) {
		return nil, fmt.Errorf("check queues: %d offsets for %d queues", len(offsets), len(queues))
	}
	groups, err := s.queueGroups(queues, checkGroup)
	if err != nil {
		return nil, fmt.Errorf("check queues: %w", err)
	}
	if len(queues) == 0 {
		return nil, nil
	}
	calls := make([]*scriptCall, groups.len())
	for g := range calls {
		lo, hi := groups.bounds[g], groups.bounds[g+1]
		// The keys are built for this call only, not cached: a full pass
		// covers every parked queue, and caching their names emptied the
		// cache of the busy queues' (keyspace.queue).
		c := &scriptCall{keys: s.cutKeys(queues, groups, lo, hi, "log", "delayed"), args: make([]any, 0, hi-lo)}
		for k := lo; k < hi; k++ {
			c.args = append(c.args, "("+formatInt(int64(offsets[groups.index(k)])))
		}
		calls[g] = c
	}
	s.evalPipelined(ctx, checkScript, calls)
	out := make([]QueueCheck, len(queues))
	for g, c := range calls {
		lo, hi := groups.bounds[g], groups.bounds[g+1]
		vals, err := c.cmd.Int64Slice()
		if err == nil && len(vals) != 2*(hi-lo) {
			err = fmt.Errorf("check script returned %d values for %d queues", len(vals), hi-lo)
		}
		if err != nil {
			return nil, fmt.Errorf("check queues: %w", err)
		}
		for k := lo; k < hi; k++ {
			i, j := groups.index(k), 2*(k-lo)
			qc := QueueCheck{Queue: queues[i], Ready: vals[j]&1 != 0, Stale: vals[j]&2 != 0}
			if due := vals[j+1]; due > 0 {
				qc.NextDue = time.UnixMilli(due)
			}
			out[i] = qc
		}
	}
	return out, nil
}

// queueGroups is how queues are split into the commands that cover them:
// group g is the queues at indices index(bounds[g]) … index(bounds[g+1]-1).
type queueGroups struct {
	order  []int // the queues' indices, group by group; nil: 0, 1, 2, …
	bounds []int // len() + 1 offsets into order
}

func (g queueGroups) len() int { return len(g.bounds) - 1 }

// index is the index in queues of the k-th queue, counted group by group.
func (g queueGroups) index(k int) int {
	if g.order == nil {
		return k
	}
	return g.order[k]
}

// queueGroups splits queues into the groups one command may cover: runs
// of at most per queues on a standalone server (in the order given); on a
// Cluster, where a command's keys must share a slot, runs of at most per
// queues of one slot. It refuses an invalid queue name. It allocates a
// few slices a call (on a Cluster two as long as queues), no object per
// queue.
func (s *core) queueGroups(queues []string, per int) (queueGroups, error) {
	for _, q := range queues {
		// Validate only: building (and caching) every queue's key names
		// here cost the idle backstop ~500 bytes of garbage per owned
		// queue per check, and emptied the cache of the busy queues'.
		if err := drover.ValidateQueueName(q); err != nil {
			return queueGroups{}, err
		}
	}
	var g queueGroups
	if _, cluster := s.rdb.(*redis.ClusterClient); !cluster {
		g.bounds = make([]int, 0, (len(queues)+per-1)/per+1)
		for k := 0; k < len(queues); k += per {
			g.bounds = append(g.bounds, k)
		}
		g.bounds = append(g.bounds, len(queues))
		return g, nil
	}
	slots := make([]uint16, len(queues))
	g.order = make([]int, len(queues))
	for i, q := range queues {
		slots[i] = clusterSlot(q)
		g.order[i] = i
	}
	slices.SortStableFunc(g.order, func(a, b int) int { return cmp.Compare(slots[a], slots[b]) })
	for k := range g.order {
		if k == 0 || slots[g.order[k]] != slots[g.order[k-1]] || k-g.bounds[len(g.bounds)-1] == per {
			g.bounds = append(g.bounds, k)
		}
	}
	g.bounds = append(g.bounds, len(queues))
	return g, nil
}

// slotGroups is queueGroups as the queues of each group, for callers that
// keep a group's names with its command (slotCalls).
func (s *core) slotGroups(queues []string, per int) ([][]string, error) {
	g, err := s.queueGroups(queues, per)
	if err != nil {
		return nil, err
	}
	groups := make([][]string, g.len())
	for i := range groups {
		lo, hi := g.bounds[i], g.bounds[i+1]
		part := make([]string, hi-lo)
		for k := lo; k < hi; k++ {
			part[k-lo] = queues[g.index(k)]
		}
		groups[i] = part
	}
	return groups, nil
}

// clusterSlot is the Redis Cluster slot of a queue's keys: CRC16 (XMODEM)
// of the hash tag, the queue name, modulo 16384.
func clusterSlot(queue string) uint16 {
	var crc uint16
	for i := 0; i < len(queue); i++ {
		crc ^= uint16(queue[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// headGroup is the most :seq keys one MGET reads (on a Cluster, of one
// slot).
const headGroup = 1000

// QueueHeads appends to heads the last position handed out in each of
// queues (its :seq key; 0 for a queue never written), in the order of
// queues, and returns the extended slice: the periodic half of the owner's
// backstop (DESIGN.md §10). A queue whose head is past the owner's fetched
// offset has a message its wake-up did not announce. It costs one MGET per
// 1,000 queues on a standalone server (per slot on a Cluster, at most
// 1,000), all in one pipeline, and one key lookup per queue inside Redis —
// no script, so checking 100,000 idle queues every few seconds stays a few
// hundred commands. CheckQueues, which also finds delayed messages, is for
// the rarer full checks.
//
// The keys of an MGET are cut from one string and passed by pointer (no
// string or box per key); the reply is go-redis's, a string per value, so
// that a Cluster's MOVED and ASK redirects are followed as for any command.
// A worker reads its 25,000 parked queues' heads every 5 s (docs/decisions.md,
// "The idle backstop's head read and full pass allocate per MGET, not per
// queue").
func (s Log) QueueHeads(ctx context.Context, queues []string, heads []drover.Position) ([]drover.Position, error) {
	groups, err := s.queueGroups(queues, headGroup)
	if err != nil {
		return heads, fmt.Errorf("read queue heads: %w", err)
	}
	start := len(heads)
	heads = slices.Grow(heads, len(queues))[:start+len(queues)]
	if len(queues) == 0 {
		return heads, nil
	}
	cmds := make([]*redis.SliceCmd, groups.len())
	pipe := s.rdb.Pipeline()
	for g := range cmds {
		keys := s.cutKeys(queues, groups, groups.bounds[g], groups.bounds[g+1], "seq")
		args := make([]any, 1+len(keys))
		args[0] = "mget"
		for j := range keys {
			args[1+j] = &keys[j] // a pointer: no allocation to box it
		}
		cmds[g] = redis.NewSliceCmd(ctx, args...)
		_ = pipe.Process(ctx, cmds[g])
	}
	_, _ = pipe.Exec(ctx) // errors are read per command below
	for g, cmd := range cmds {
		lo, hi := groups.bounds[g], groups.bounds[g+1]
		vals, err := cmd.Result()
		if err == nil && len(vals) != hi-lo {
			err = fmt.Errorf("MGET returned %d values for %d keys", len(vals), hi-lo)
		}
		if err != nil {
			return heads[:start], fmt.Errorf("read queue heads: %w", err)
		}
		for k := lo; k < hi; k++ {
			i := groups.index(k)
			var pos int64
			if v, ok := vals[k-lo].(string); ok {
				if pos, err = strconv.ParseInt(v, 10, 64); err != nil || pos < 0 {
					return heads[:start], fmt.Errorf("read queue heads: the seq key of %q holds %q, not a position", queues[i], v)
				}
			}
			heads[start+i] = drover.Position(pos)
		}
	}
	return heads, nil
}

// cutKeys returns the keys named by suffixes (writeQueueKey) of the
// queues at groups.index(lo) … groups.index(hi-1), queue by queue: written
// into one string and cut, two allocations in all, none per key, and none
// cached.
func (s *core) cutKeys(queues []string, groups queueGroups, lo, hi int, suffixes ...string) []string {
	n := 0
	for k := lo; k < hi; k++ {
		for _, suffix := range suffixes {
			n += s.keys.queueKeyLen(queues[groups.index(k)], suffix)
		}
	}
	var text strings.Builder
	text.Grow(n)
	for k := lo; k < hi; k++ {
		for _, suffix := range suffixes {
			s.keys.writeQueueKey(&text, queues[groups.index(k)], suffix)
		}
	}
	all := text.String()
	keys := make([]string, 0, (hi-lo)*len(suffixes))
	for k := lo; k < hi; k++ {
		for _, suffix := range suffixes {
			m := s.keys.queueKeyLen(queues[groups.index(k)], suffix)
			keys, all = append(keys, all[:m]), all[m:]
		}
	}
	return keys
}
