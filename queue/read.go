package queue

import (
	"context"
	"fmt"
	"strconv"

	"github.com/drover-dev/drover"
)

// MaxReadBatch is the most entries one ReadAfter call returns.
const MaxReadBatch = 10000

// Entry is one log entry as read (drover.LogEntry); Decode decodes its
// envelope.
type Entry = drover.LogEntry

// PoisonError says why an entry cannot be processed (drover.PoisonError).
type PoisonError = drover.PoisonError

// decodeEnvelope is the envelope decoder: drover.DecodeMessage, which never
// panics and wraps drover.ErrPoison. It is a seam for FuzzDecodeEnvelope.
func decodeEnvelope(raw []byte) (*drover.Message, error) {
	return drover.DecodeMessage(raw)
}

// ReadAfter returns up to n entries of queue with positions strictly after
// offset, in position order, in one round trip. An id in the log without an
// envelope comes back as an entry with Raw nil (poison), never dropped. n is
// capped at MaxReadBatch; n <= 0 returns nothing. An empty result means
// nothing follows the offset (now).
func (s Log) ReadAfter(ctx context.Context, queue string, offset drover.Position, n int) ([]Entry, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", queue, err)
	}
	if n <= 0 {
		return nil, nil
	}
	n = min(n, MaxReadBatch)
	reply, err := s.run(ctx, readAfterScript, []string{qk.log, qk.msg, qk.attempts}, "("+formatInt(int64(offset)), n).Slice()
	if err != nil {
		return nil, fmt.Errorf("read %s after %d: %w", queue, offset, err)
	}
	if len(reply) == 0 {
		return nil, nil
	}
	pairs, ok := reply[0].([]any)
	if !ok || len(pairs)%2 != 0 {
		return nil, fmt.Errorf("read %s after %d: malformed reply from the read script", queue, offset)
	}
	out := make([]Entry, 0, len(pairs)/2)
	for _, part := range reply[1:] {
		fields, ok := part.([]any) // per id: envelope, starts
		if !ok || len(fields)%2 != 0 {
			return nil, fmt.Errorf("read %s after %d: malformed reply from the read script", queue, offset)
		}
		for j := 0; j < len(fields); j += 2 {
			i := 2 * len(out)
			if i+1 >= len(pairs) {
				return nil, fmt.Errorf("read %s after %d: the read script returned more envelopes than ids", queue, offset)
			}
			e, err := entryOf(queue, pairs[i], pairs[i+1], fields[j], fields[j+1])
			if err != nil {
				return nil, fmt.Errorf("read %s after %d: %w", queue, offset, err)
			}
			out = append(out, e)
		}
	}
	if 2*len(out) != len(pairs) {
		return nil, fmt.Errorf("read %s after %d: the read script returned %d envelopes for %d ids", queue, offset, len(out), len(pairs)/2)
	}
	return out, nil
}

// entryOf makes an entry of queue from the read scripts' values for it: its
// id and score (from ZRANGE WITHSCORES), its envelope and its recorded
// starts (from the HMGETs; nil when absent).
func entryOf(queue string, id, score, env, starts any) (Entry, error) {
	sid, _ := id.(string)
	sc, _ := score.(string)
	pos, err := parseScore(sc)
	if err != nil {
		return Entry{}, fmt.Errorf("position of %s: %w", sid, err)
	}
	e := Entry{Queue: queue, Position: pos, ID: sid}
	if s, ok := env.(string); ok {
		e.Raw = []byte(s)
	}
	if s, ok := starts.(string); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return Entry{}, fmt.Errorf("recorded starts of %s: %q is not a count", sid, s)
		}
		e.Starts = n
	}
	return e, nil
}

// parseScore parses a sorted-set score that holds a position. Redis writes
// integral scores as integers; a float form is accepted as well.
func parseScore(s string) (drover.Position, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return drover.Position(v), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("score %q is not a number", s)
	}
	return drover.Position(f), nil
}
