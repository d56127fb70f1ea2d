package queue

import (
	"context"
	"fmt"

	"github.com/drover-dev/drover"
)

// readGroup is the most queues one read-many script call covers on a
// standalone server (on a Cluster a call covers the queues of one slot).
const readGroup = 256

// maxManyRead is the most entries ReadMany reads of one queue inside the
// batch script (one HMGET); a larger n is read with ReadAfter alone.
const maxManyRead = 1000

// ReadMany reads many queues in one round trip: for each request, up to N
// entries after After, as ReadAfter returns them (their recorded starts only
// when the request asks: Starts). It is the owner's reader
// (DESIGN.md §10): the queues woken since its last read are read together,
// one script call per 256 queues on a standalone server (one per slot on a
// Cluster), all in one pipeline — not a round trip, a script call and a
// connection of the client per woken queue. It returns one result per
// request, in order; an invalid queue name or an N above 1,000 affects only
// its own request (the latter is read with ReadAfter).
func (s Log) ReadMany(ctx context.Context, reqs []drover.ReadRequest) []drover.ReadResult {
	out := make([]drover.ReadResult, len(reqs))
	byName := make(map[string][]int, len(reqs)) // queue → request indexes
	var names []string
	var alone []int
	for i, r := range reqs {
		switch {
		case r.N <= 0:
			continue // nothing asked: nothing returned
		case r.N > maxManyRead:
			alone = append(alone, i)
			continue
		}
		if _, err := s.queueKeys(r.Queue); err != nil {
			out[i].Err = fmt.Errorf("read %s: %w", r.Queue, err)
			continue
		}
		if _, ok := byName[r.Queue]; !ok {
			names = append(names, r.Queue)
		}
		byName[r.Queue] = append(byName[r.Queue], i)
	}
	for _, i := range alone {
		out[i].Entries, out[i].Err = s.ReadAfter(ctx, reqs[i].Queue, reqs[i].After, reqs[i].N)
	}
	if len(names) == 0 {
		return out
	}
	// A queue asked twice in one batch (not the worker's case) goes in
	// a later call, so that each call reads a queue once.
	var rounds [][]int
	for len(byName) > 0 {
		var round []int
		next := names[:0:0]
		for _, q := range names {
			idx := byName[q]
			round = append(round, idx[0])
			if len(idx) > 1 {
				byName[q] = idx[1:]
				next = append(next, q)
			} else {
				delete(byName, q)
			}
		}
		rounds = append(rounds, round)
		names = next
	}
	for _, round := range rounds {
		s.readMany(ctx, reqs, round, out)
	}
	return out
}

// readMany reads the requests at idx (distinct queues) in one pipeline.
func (s Log) readMany(ctx context.Context, reqs []drover.ReadRequest, idx []int, out []drover.ReadResult) {
	at := make(map[string]int, len(idx)) // queue → request index
	names := make([]string, len(idx))
	for k, i := range idx {
		names[k] = reqs[i].Queue
		at[reqs[i].Queue] = i
	}
	calls, err := s.slotCalls(names, readGroup, func(c *scriptCall, q string) {
		r, qk := reqs[at[q]], s.keys.queue(q)
		c.keys = append(c.keys, qk.log, qk.msg, qk.attempts)
		starts := "0"
		if r.Starts {
			starts = "1"
		}
		c.args = append(c.args, "("+formatInt(int64(r.After)), r.N, starts)
	})
	if err != nil { // names were checked: cannot happen
		for _, i := range idx {
			out[i].Err = fmt.Errorf("read %s: %w", reqs[i].Queue, err)
		}
		return
	}
	s.evalPipelined(ctx, readManyScript, calls)
	for _, c := range calls {
		reply, err := c.cmd.Slice()
		if err == nil && len(reply) != 2*len(c.queues) {
			err = fmt.Errorf("the read-many script returned %d values for %d queues", len(reply), len(c.queues))
		}
		for k, q := range c.queues {
			i := at[q]
			r := reqs[i]
			if err != nil {
				out[i].Err = fmt.Errorf("read %s after %d: %w", r.Queue, r.After, err)
				continue
			}
			out[i].Entries, out[i].Err = manyEntries(r, reply[2*k], reply[2*k+1])
		}
	}
}

// manyEntries decodes one queue's part of a read-many reply: the ids with
// their positions and the HMGET of their fields (per id its envelope, then
// its starts when r asked for them).
func manyEntries(r drover.ReadRequest, ids, fields any) ([]Entry, error) {
	pairs, ok1 := ids.([]any)
	vals, ok2 := fields.([]any)
	per := 1 // fields per id
	if r.Starts {
		per = 2
	}
	if !ok1 || !ok2 || len(pairs)%2 != 0 || len(vals) != per*len(pairs)/2 {
		return nil, fmt.Errorf("read %s after %d: malformed reply from the read-many script", r.Queue, r.After)
	}
	if len(vals) == 0 {
		return nil, nil
	}
	out := make([]Entry, len(pairs)/2)
	for j := range out {
		var n any // not asked: no starts
		if per == 2 {
			n = vals[2*j+1]
		}
		e, err := entryOf(r.Queue, pairs[2*j], pairs[2*j+1], vals[per*j], n)
		if err != nil {
			return nil, fmt.Errorf("read %s after %d: %w", r.Queue, r.After, err)
		}
		out[j] = e
	}
	return out, nil
}
