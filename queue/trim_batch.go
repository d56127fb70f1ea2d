package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/drover-dev/drover"
)

// trimBatch is the most queues trimmed in one round trip: one trim-many
// call's worth on a standalone server. Redis runs every command it has
// read from a client's socket before it serves the next client, and reads
// a pipeline in chunks of tens of KB, so four 64-queue calls in one
// pipeline made the reads of busy queues wait for one and a half calls at
// a time (~1.7 ms of trims); a call per round trip bounds the wait by one
// (docs/decisions.md, "Busy runtime: what blocks Redis while busy": p99
// 34 → 28 ms at 10,000 busy queues, medians of six runs).
const trimBatch = trimGroup

// recordsPerCall is the most outcome records one trim-many call carries
// for a queue. A queue with more (a busy inline queue's flush: 6,500 to
// 8,300 records every 200 ms in the outcome benchmark) has them sent in
// records-only calls of their own ahead of its trim's, in the same
// pipeline. A record keeps Redis busy for about 1 µs in the script, and
// Redis serves other clients between the socket reads of a pipeline, not
// during a call: calls of 1,000 records (about 130 KB each) let the queue
// loops' reads in every millisecond or so, where one call of 7,500 blocked
// them for 6-8 ms (docs/decisions.md, "Outcome records: what they cost per
// task").
const recordsPerCall = 1000

// trimGroup is the most queues one trim-many script call covers on a
// standalone server (on a Cluster a call covers the queues of one slot),
// and trimManyChunk the most log entries it removes of one queue: a call
// removes at most trimGroup × trimManyChunk entries, so that no call
// blocks Redis for long (a queue with more is trimmed further by Trim).
// Smaller calls cost Redis more in all and, pipelined, made reads wait
// longer, not shorter (the same decision).
const (
	trimGroup     = 64
	trimManyChunk = 256
)

// TrimMany trims many queues, each queue's outcome records written first
// (as TrimRecording): one trim-many script call per 64 queues on a
// standalone server, one round trip each (on a Cluster one call per slot,
// the calls of 64 queues in one pipeline). An owner's committer trims
// every queue of a commit flush with it, so that 500 progressed queues
// cost eight round trips on one connection, not two script calls each.
// It returns one error per request, nil where the trim succeeded; a
// failed script call fails the queues it carried (a later flush trims
// them again: trims and records may be repeated). A RecordsOnly request
// writes its records and removes nothing.
func (s Log) TrimMany(ctx context.Context, reqs []drover.TrimRequest) []error {
	errs := make([]error, len(reqs))
	for i := 0; i < len(reqs); i += trimBatch {
		s.trimMany(ctx, reqs[i:min(i+trimBatch, len(reqs))], errs[i:])
	}
	return errs
}

func (s Log) trimMany(ctx context.Context, reqs []drover.TrimRequest, errs []error) {
	args := make([][]any, len(reqs)) // each request's script arguments
	at := make(map[string]int, len(reqs))
	var names []string
	var again []int         // a queue asked twice: trimmed on its own afterwards
	var ahead []*scriptCall // records-only calls of the queues with more than recordsPerCall records
	var lone []string       // the queues whose request goes in a record-many call
	var noted []string      // the queues whose request goes in a record-noted call
	staged := s.stageRecords(ctx, reqs)
	nowMs := s.notedNow(reqs)
	for i := range reqs {
		r := &reqs[i]
		if _, err := s.queueKeys(r.Queue); err != nil {
			errs[i] = fmt.Errorf("trim: %w", err)
			continue
		}
		if _, dup := at[r.Queue]; dup {
			again = append(again, i)
			continue
		}
		if a, ok := recordNotedArgs(r, len(staged[i]), nowMs); ok {
			at[r.Queue] = i
			args[i] = a
			noted = append(noted, r.Queue)
			continue
		}
		if a, ok, err := recordManyArgs(r, len(staged[i])); err != nil {
			errs[i] = err
			continue
		} else if ok {
			at[r.Queue] = i
			args[i] = a
			lone = append(lone, r.Queue)
			continue
		}
		chunk := trimManyChunk
		if r.RecordsOnly {
			chunk = 0 // the script writes the records and leaves the log
		}
		sweep := 0
		if r.SweepSeen {
			sweep = 1
		}
		a := []any{int64(r.Offset), max(r.Retention, 0).Microseconds(), chunk, 0, 0, sweep, 0, 0, "", 0, 0}
		if keep := r.Policy.Keep(); len(r.Outcomes) > 0 && keep > 0 {
			// The oldest records went staged, whole buckets of them; past
			// recordsPerCall, the oldest of the rest go first, in
			// records-only calls of their own. The first call of the
			// queue adopts the staged buckets.
			tokens := staged[i]
			outcomes := r.Outcomes[len(tokens)*bucketRecords(r.Policy):]
			// The note is sent only when this call writes all the records:
			// staged buckets and calls ahead would write past it.
			note := r.Bucket != nil && r.Bucket.Name != "" && len(tokens) == 0 && len(outcomes) <= recordsPerCall
			head := func(retention int64, chunk, k int) []any {
				h := make([]any, 0, 8+len(tokens)+2*k)
				h = append(h, int64(r.Offset), retention, chunk, r.Policy.MaxRecords(), keep.Milliseconds(), sweep, k, len(tokens))
				for _, t := range tokens {
					h = append(h, t)
				}
				tokens = nil
				return h
			}
			for len(outcomes) > recordsPerCall {
				pa, err := appendRecordArgs(head(0, 0, recordsPerCall), r.Queue, outcomes[:recordsPerCall])
				if err != nil {
					errs[i] = err
					break
				}
				pa = append(pa, "", 0, 0) // no note: the main call answers the bucket
				qk := s.keys.queue(r.Queue)
				ahead = append(ahead, &scriptCall{queues: []string{r.Queue}, keys: []string{qk.log, qk.msg, qk.delayed, qk.seen, qk.done}, args: pa})
				outcomes = outcomes[recordsPerCall:]
			}
			if errs[i] != nil {
				continue
			}
			var err error
			if a, err = appendRecordArgs(head(a[1].(int64), chunk, len(outcomes)), r.Queue, outcomes); err != nil {
				errs[i] = err
				continue
			}
			if note {
				a = appendNote(a, r.Bucket, outcomes)
			} else {
				a = append(a, "", 0, 0)
			}
		}
		at[r.Queue] = i
		args[i] = a
		names = append(names, r.Queue)
	}
	calls, err := s.slotCalls(names, trimGroup, func(c *scriptCall, q string) {
		qk := s.keys.queue(q)
		c.keys = append(c.keys, qk.log, qk.msg, qk.delayed, qk.seen, qk.done)
		c.args = append(c.args, args[at[q]]...)
	})
	if err != nil { // names were checked: cannot happen
		for _, q := range names {
			errs[at[q]] = fmt.Errorf("trim: %w", err)
		}
		return
	}
	for _, c := range calls {
		c.keys = s.withRetireIndex(c.keys) // after the 5 per queue
	}
	records := s.recordManyCalls(lone, reqs, at, args, errs)
	notes, err := s.slotCalls(noted, trimGroup, func(c *scriptCall, q string) {
		c.script = recordNotedScript
		c.keys = append(c.keys, s.keys.queue(q).done+":"+reqs[at[q]].Bucket.Name)
		c.args = append(c.args, args[at[q]]...)
	})
	if err != nil { // names were checked: cannot happen
		for _, q := range noted {
			errs[at[q]] = fmt.Errorf("record outcomes: %w", err)
		}
		notes = nil
	}
	s.evalPipelined(ctx, trimManyScript, append(append(append(ahead, calls...), records...), notes...))
	applyRecordMany(records, reqs, at, errs)
	if gone := applyRecordNoted(notes, reqs, at, errs); len(gone) > 0 {
		// Their noted buckets were deleted since the notes (the script
		// deleted what its HSET made again): the records go with no note.
		var resend []string
		for _, q := range gone {
			r := &reqs[at[q]]
			*r.Bucket = drover.RecordBucket{}
			a, ok, err := recordManyArgs(r, 0)
			if err != nil || !ok { // its records encoded for the noted call: cannot happen
				errs[at[q]] = fmt.Errorf("record %d outcomes of %s again: %v", len(r.Outcomes), r.Queue, err)
				continue
			}
			args[at[q]] = a
			resend = append(resend, q)
		}
		again := s.recordManyCalls(resend, reqs, at, args, errs)
		s.evalPipelined(ctx, recordManyScript, again)
		applyRecordMany(again, reqs, at, errs)
	}
	for _, c := range calls {
		vals, err := c.cmd.Slice()
		if err == nil && len(vals) != 4*len(c.queues) {
			err = fmt.Errorf("the trim-many script returned %d values for %d queues", len(vals), len(c.queues))
		}
		for k, q := range c.queues {
			i := at[q]
			r := &reqs[i]
			if err != nil {
				errs[i] = fmt.Errorf("trim %s at %d (%d outcome records): %w", r.Queue, r.Offset, len(r.Outcomes), err)
				if r.Bucket != nil {
					*r.Bucket = drover.RecordBucket{} // what the call wrote is unknown
				}
				continue
			}
			removed, _ := vals[4*k].(int64)
			if name, _ := vals[4*k+1].(string); r.Bucket != nil && name != "" {
				expiry, _ := vals[4*k+2].(int64)
				held, _ := vals[4*k+3].(int64)
				*r.Bucket = drover.RecordBucket{Name: name, Expiry: expiry, Held: held}
			}
			if removed >= trimManyChunk && !r.RecordsOnly {
				_, errs[i] = s.Trim(ctx, r.Queue, r.Offset, r.Retention)
			}
		}
	}
	for _, c := range ahead { // a failed call fails its queue's request
		if err := c.cmd.Err(); err != nil {
			i := at[c.queues[0]]
			errs[i] = fmt.Errorf("record outcomes of %s: %w", reqs[i].Queue, err)
		}
	}
	for _, i := range again {
		r := &reqs[i]
		if r.RecordsOnly {
			qk, err := s.queueKeys(r.Queue) // checked above
			if err == nil {
				err = s.recordOutcomes(ctx, qk, r.Outcomes, r.Policy)
			}
			errs[i] = err
			continue
		}
		_, errs[i] = s.TrimRecording(ctx, r.Queue, r.Offset, r.Retention, r.Outcomes, r.Policy)
	}
}

// recordManyCalls makes the record-many calls of queues, whose requests'
// arguments are args[at[q]]; a queue it cannot place gets an error.
func (s Log) recordManyCalls(queues []string, reqs []drover.TrimRequest, at map[string]int, args [][]any, errs []error) []*scriptCall {
	calls, err := s.slotCalls(queues, trimGroup, func(c *scriptCall, q string) {
		c.script = recordManyScript
		c.keys = append(c.keys, s.keys.queue(q).done)
		c.args = append(c.args, args[at[q]]...)
	})
	if err != nil { // names were checked: cannot happen
		for _, q := range queues {
			errs[at[q]] = fmt.Errorf("record outcomes of %s: %w", reqs[at[q]].Queue, err)
		}
		return nil
	}
	return calls
}

// applyRecordMany reads the answers of record-many calls: each queue's
// bucket becomes its request's note, or its error is set and its note
// cleared (what a failed call wrote is unknown).
func applyRecordMany(calls []*scriptCall, reqs []drover.TrimRequest, at map[string]int, errs []error) {
	for _, c := range calls {
		vals, err := c.cmd.Slice()
		if err == nil && len(vals) != 3*len(c.queues) {
			err = fmt.Errorf("the record-many script returned %d values for %d queues", len(vals), len(c.queues))
		}
		for k, q := range c.queues {
			r := &reqs[at[q]]
			if err != nil {
				errs[at[q]] = fmt.Errorf("record %d outcomes of %s: %w", len(r.Outcomes), r.Queue, err)
				*r.Bucket = drover.RecordBucket{}
				continue
			}
			if name, _ := vals[3*k].(string); name != "" {
				expiry, _ := vals[3*k+1].(int64)
				held, _ := vals[3*k+2].(int64)
				*r.Bucket = drover.RecordBucket{Name: name, Expiry: expiry, Held: held}
			}
		}
	}
}

// applyRecordNoted reads the answers of record-noted calls: a queue whose
// records went into its noted bucket counts them in its note; it returns
// the queues whose bucket was gone (nothing written). A failed call sets
// its queues' errors and clears their notes.
func applyRecordNoted(calls []*scriptCall, reqs []drover.TrimRequest, at map[string]int, errs []error) (gone []string) {
	for _, c := range calls {
		vals, err := c.cmd.Int64Slice()
		if err == nil && len(vals) != len(c.queues) {
			err = fmt.Errorf("the record-noted script returned %d values for %d queues", len(vals), len(c.queues))
		}
		for k, q := range c.queues {
			r := &reqs[at[q]]
			switch {
			case err != nil:
				errs[at[q]] = fmt.Errorf("record %d outcomes of %s: %w", len(r.Outcomes), r.Queue, err)
				*r.Bucket = drover.RecordBucket{}
			case vals[k] == 1:
				r.Bucket.Held += int64(len(r.Outcomes))
			default:
				gone = append(gone, q)
			}
		}
	}
	return gone
}

// notedMargin is how much longer than the retention a noted bucket must
// still live, by the producer's estimate of Redis's clock, for its
// records to go in a record-noted call: the estimate lags Redis's clock
// by up to a round trip (redisClock), and a record must live its
// retention. A bucket inside the margin takes the record-many path, whose
// script reads TIME. The other bound, a bucket made under a longer
// retention than today's, gets the same slack (a bucket made a moment ago
// can expire after the estimate's now + width + retention), so a lowered
// retention reaches a noted bucket's records at most notedMargin later.
const notedMargin = 5 * time.Second

// notedNow returns the estimate of Redis's clock in unix ms when a
// request of reqs may take a record-noted call, else 0 (no estimate, or
// no request with a note). It never waits for Redis (redisClock.peek): a
// TrimMany with no fresh reading sends its noted requests through
// record-many while the reading is taken in the background.
func (s Log) notedNow(reqs []drover.TrimRequest) int64 {
	for i := range reqs {
		if r := &reqs[i]; r.RecordsOnly && r.Bucket != nil && r.Bucket.Name != "" {
			return s.redisNow.peek(s.rdb) / 1000
		}
	}
	return 0
}

// recordNotedArgs returns the record-noted script's arguments for r when
// r's records may go into the bucket its note names without the record
// function (recordNotedSource): a records-only request, none staged, with
// a note of a bucket these records do not fill past its size (bucketRecords),
// whose expiry, by nowMs (the estimate of Redis's clock, 0: none), lies
// between now + retention + notedMargin and now + width + retention +
// notedMargin (the record function's check, which the script does not
// make), and records
// with distinct ids (the script's marker count needs them). Records that
// do not encode take the record-many path, which reports them.
func recordNotedArgs(r *drover.TrimRequest, staged int, nowMs int64) ([]any, bool) {
	b, keep, k := r.Bucket, r.Policy.Keep().Milliseconds(), len(r.Outcomes)
	if nowMs <= 0 || !r.RecordsOnly || b == nil || b.Name == "" || keep <= 0 || k == 0 || staged > 0 || k > recordsPerCall {
		return nil, false
	}
	width := max(1000, keep/8) // the record function's
	if b.Held < 0 || b.Held+int64(k) > int64(bucketRecords(r.Policy)) ||
		b.Expiry < nowMs+keep+notedMargin.Milliseconds() || b.Expiry > nowMs+width+keep+notedMargin.Milliseconds() || !distinctIDs(r.Outcomes) {
		return nil, false
	}
	a, err := appendRecordArgs(append(make([]any, 0, 1+2*k), k), r.Queue, r.Outcomes)
	if err != nil {
		return nil, false
	}
	return a, true
}

// recordManyArgs returns the record-many script's arguments for r when r
// goes in a record-many call: a records-only request whose records are
// all arguments of one call (none staged, at most recordsPerCall) and
// which carries its owner's note (Log.TrimMany's callers, the committer,
// always do), the busy key's request after each commit. Such a request
// needs none of trim-many's five keys and eleven arguments but the index
// and the records (docs/decisions.md, "Issue 43: records-only requests in
// a call of their own"). An invalid record is an error.
func recordManyArgs(r *drover.TrimRequest, staged int) ([]any, bool, error) {
	keep := r.Policy.Keep()
	if !r.RecordsOnly || r.Bucket == nil || keep <= 0 || len(r.Outcomes) == 0 || staged > 0 || len(r.Outcomes) > recordsPerCall {
		return nil, false, nil
	}
	a := make([]any, 0, 6+2*len(r.Outcomes))
	a, err := appendRecordArgs(append(a, r.Policy.MaxRecords(), keep.Milliseconds(), len(r.Outcomes)), r.Queue, r.Outcomes)
	if err != nil {
		return nil, false, err
	}
	return appendNote(a, r.Bucket, r.Outcomes), true, nil
}

// appendNote appends the owner's note of its records' bucket (name,
// expiry, records held) to a call's arguments for a queue's records, or
// none ("", 0, 0) when b is nil or two of the records share an id: the
// scripts tell that the noted bucket is still there by the fields one HSET
// added, its marker field among them (recordFunction), which a repeated id
// would miscount. A repeat within one flush is rare (a message run twice
// by one owner before its records went out), and costs only the note.
func appendNote(args []any, b *drover.RecordBucket, outcomes []drover.Outcome) []any {
	if b == nil || b.Name == "" || !distinctIDs(outcomes) {
		return append(args, "", 0, 0)
	}
	return append(args, b.Name, b.Expiry, b.Held)
}

// distinctIDs reports whether no two of outcomes share an id.
func distinctIDs(outcomes []drover.Outcome) bool {
	if len(outcomes) < 2 {
		return true
	}
	seen := make(map[string]struct{}, len(outcomes))
	for i := range outcomes {
		if _, dup := seen[outcomes[i].ID]; dup {
			return false
		}
		seen[outcomes[i].ID] = struct{}{}
	}
	return true
}

// bucketRecords is how many records an outcome bucket of policy takes (the
// scripts' per): 1/8 of the bound.
func bucketRecords(policy drover.Outcomes) int { return max(1, policy.MaxRecords()/8) }

// Staged records: a record sent as a script argument costs Redis 0.6-1.0
// µs (Lua makes a string of every argument, redis.call converts it back,
// HSET copies it), the same record in a plain HSET 0.12-0.18 µs. So a
// queue's records that fill whole buckets (bucketRecords, at least
// minStaged) are written first, a bucket's worth per HSET to a key of
// their own (<done>:staged:<token>, expiring after stagedTTL in case the
// call that adopts it never comes), in one round trip for the whole
// TrimMany; trim-many then makes each a new bucket by RENAME
// (docs/redis-schema.md, "Outcome records"; docs/decisions.md, "Outcome
// records: what they cost per task").
const (
	minStaged = 256
	stagedTTL = time.Minute
)

// stageRecords writes the staged buckets of reqs and returns each
// request's staging tokens, oldest first (none for a request of a queue
// asked before in reqs: it is written on its own). When the round trip
// fails, nothing counts as staged: every record goes as an argument, and
// what was written expires.
func (s *core) stageRecords(ctx context.Context, reqs []drover.TrimRequest) [][]string {
	tokens := make([][]string, len(reqs))
	if !anyStaged(reqs) {
		// A commit flush's usual case (a few records a queue): no key
		// names, no map of the queues, no pipeline.
		return tokens
	}
	pipe := s.rdb.Pipeline()
	seen := make(map[string]bool, len(reqs))
	for i := range reqs {
		r := &reqs[i]
		qk, err := s.queueKeys(r.Queue)
		if err != nil || seen[r.Queue] {
			continue
		}
		seen[r.Queue] = true
		per := bucketRecords(r.Policy)
		if r.Policy.Keep() <= 0 || per < minStaged {
			continue
		}
		for b := 0; b+per <= len(r.Outcomes); b += per {
			token, err := s.ids.next()
			if err != nil {
				break
			}
			key := qk.done + ":staged:" + token
			hset, err := appendRecordArgs(append(make([]any, 0, 2+2*per), "hset", key), r.Queue, r.Outcomes[b:b+per])
			if err != nil {
				break // the script call reports it
			}
			pipe.Do(ctx, hset...)
			pipe.PExpire(ctx, key, stagedTTL)
			tokens[i] = append(tokens[i], token)
		}
	}
	if pipe.Len() == 0 {
		return tokens
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return make([][]string, len(reqs))
	}
	return tokens
}

// anyStaged reports whether a request of reqs holds a whole bucket of
// records to stage (stageRecords).
func anyStaged(reqs []drover.TrimRequest) bool {
	for i := range reqs {
		r := &reqs[i]
		if per := bucketRecords(r.Policy); per >= minStaged && len(r.Outcomes) >= per && r.Policy.Keep() > 0 {
			return true
		}
	}
	return false
}

// appendRecordArgs appends the record script's 2 arguments per record of
// outcomes (id, record JSON) to args. Neither costs an allocation of its
// own: the id goes as a pointer to the record's (go-redis writes a
// *string), the JSON as a pointer into one slice of recordArg over one
// buffer; an id or a []byte put in an []any is one allocation each, two
// per succeeded task (docs/decisions.md, "Outcome records: what they cost
// per task"). outcomes must not change until the call is sent.
func appendRecordArgs(args []any, queue string, outcomes []drover.Outcome) ([]any, error) {
	buf := make([]byte, 0, 128*len(outcomes))
	recs := make([]recordArg, len(outcomes))
	for i := range outcomes {
		o := &outcomes[i]
		if o.ID == "" {
			return nil, fmt.Errorf("record outcomes of %s: record %d has no id", queue, i)
		}
		start := len(buf)
		buf = appendOutcome(buf, o)
		recs[i] = recordArg(buf[start:len(buf):len(buf)])
		args = append(args, &o.ID, &recs[i])
	}
	return args, nil
}

// recordArg is one record's JSON as a script argument: go-redis writes an
// encoding.BinaryMarshaler as the bytes it returns.
type recordArg []byte

// MarshalBinary returns the record's JSON.
func (r *recordArg) MarshalBinary() ([]byte, error) { return *r, nil }
