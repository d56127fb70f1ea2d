package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// checkGroup is the most queues one check script call covers on a
// standalone server (on a Cluster a call covers the queues of one slot).
const checkGroup = 256

// QueueCheck is what CheckQueues found for one queue.
type QueueCheck = drover.QueueCheck

// CheckQueues reports, for every queue in offsets (queue → committed or
// fetched offset), whether a message waits after the offset and when its
// earliest delayed message is due. It is the owner's amortised backstop
// against lost wake-ups (DESIGN.md §10): one script call per 256 queues on a
// standalone server, one per slot on a Cluster, all in one pipeline — not a
// poll per queue. Results are in no particular order.
func (s *Store) CheckQueues(ctx context.Context, offsets map[string]drover.Position) ([]QueueCheck, error) {
	names := make([]string, 0, len(offsets))
	for q := range offsets {
		names = append(names, q)
	}
	calls, err := s.slotCalls(names, checkGroup, func(c *scriptCall, q string) {
		qk := s.keys.queue(q)
		c.keys = append(c.keys, qk.log, qk.delayed)
		c.args = append(c.args, "("+formatInt(int64(offsets[q])))
	})
	if err != nil {
		return nil, fmt.Errorf("check queues: %w", err)
	}
	if len(calls) == 0 {
		return nil, nil
	}
	s.evalPipelined(ctx, checkScript, calls)
	out := make([]QueueCheck, 0, len(offsets))
	for _, c := range calls {
		vals, err := c.cmd.Int64Slice()
		if err == nil && len(vals) != 2*len(c.queues) {
			err = fmt.Errorf("check script returned %d values for %d queues", len(vals), len(c.queues))
		}
		if err != nil {
			return nil, fmt.Errorf("check queues: %w", err)
		}
		for i, q := range c.queues {
			qc := QueueCheck{Queue: q, Ready: vals[2*i] == 1}
			if due := vals[2*i+1]; due > 0 {
				qc.NextDue = time.UnixMilli(due)
			}
			out = append(out, qc)
		}
	}
	return out, nil
}

// slotGroups splits queues into the groups one command may cover: runs of
// at most per queues on a standalone server; on a Cluster, where a command's
// keys must share a slot, one group per slot. It refuses an invalid queue
// name.
func (s *Store) slotGroups(queues []string, per int) ([][]string, error) {
	var groups [][]string
	_, cluster := s.rdb.(*redis.ClusterClient)
	bySlot := map[uint16]int{} // slot → index in groups
	for _, q := range queues {
		// Validate only: building (and caching) every queue's key names
		// here cost the idle backstop ~500 bytes of garbage per owned
		// queue per check, and emptied the cache of the busy queues'.
		if err := drover.ValidateQueueName(q); err != nil {
			return nil, err
		}
		if cluster {
			slot := clusterSlot(q)
			i, ok := bySlot[slot]
			if !ok {
				i = len(groups)
				bySlot[slot] = i
				groups = append(groups, nil)
			}
			groups[i] = append(groups[i], q)
			continue
		}
		if len(groups) == 0 || len(groups[len(groups)-1]) == per {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], q)
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

// headGroup is the most :seq keys one MGET reads on a standalone server (on
// a Cluster one MGET reads the queues of one slot).
const headGroup = 1000

// QueueHeads returns the last position handed out in each of queues (the
// :seq key; 0 for a queue never written): the periodic half of the owner's
// backstop (DESIGN.md §10). A queue whose head is past the owner's fetched
// offset has a message its wake-up did not announce. It costs one MGET per
// 1,000 queues on a standalone server (one per slot on a Cluster), all in
// one pipeline, and one key lookup per queue inside Redis — no script, so
// checking 100,000 idle queues every few seconds stays a few hundred
// commands. CheckQueues, which also finds delayed messages, is for the
// rarer full checks.
func (s *Store) QueueHeads(ctx context.Context, queues []string) (map[string]drover.Position, error) {
	type group struct {
		queues []string
		keys   []string
		cmd    *redis.SliceCmd
	}
	parts, err := s.slotGroups(queues, headGroup)
	if err != nil {
		return nil, fmt.Errorf("read queue heads: %w", err)
	}
	groups := make([]*group, len(parts))
	for i, part := range parts {
		g := &group{queues: part}
		for _, q := range part {
			g.keys = append(g.keys, s.keys.seq(q))
		}
		groups[i] = g
	}
	heads := make(map[string]drover.Position, len(queues))
	if len(groups) == 0 {
		return heads, nil
	}
	pipe := s.rdb.Pipeline()
	for _, g := range groups {
		g.cmd = pipe.MGet(ctx, g.keys...)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command below
	for _, g := range groups {
		vals, err := g.cmd.Result()
		if err == nil && len(vals) != len(g.queues) {
			err = fmt.Errorf("MGET returned %d values for %d keys", len(vals), len(g.queues))
		}
		if err != nil {
			return nil, fmt.Errorf("read queue heads: %w", err)
		}
		for i, q := range g.queues {
			var pos int64
			if v, ok := vals[i].(string); ok {
				if pos, err = strconv.ParseInt(v, 10, 64); err != nil {
					return nil, fmt.Errorf("read queue heads: the seq key of %q holds %q, not a position", q, v)
				}
			}
			heads[q] = drover.Position(pos)
		}
	}
	return heads, nil
}
