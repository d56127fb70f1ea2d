package queue

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/drover-dev/drover"
)

// Dead-letter records (:deadmsg values) are the envelope JSON object with
// the failure's fields added at the top level. An envelope that is not a
// JSON object (or is missing) is kept verbatim under rawEnvelopeField (or
// rawEnvelopeB64Field when it is not UTF-8), next to "id" and "queue".
const (
	rawEnvelopeField    = "raw_envelope"
	rawEnvelopeB64Field = "raw_envelope_base64"
)

// failureFields are the keys a dead-letter record adds to the envelope.
var failureFields = []string{"error", "exit_code", "stderr_tail", "failed_at", "cancelled_by"}

// Kill moves message id of queue to the dead letters with its failure: the
// record (raw, the envelope as it should be kept, plus f) goes to :deadmsg,
// the id to :dead, and the id leaves the log, :msg and the delayed set
// atomically. raw may be nil (the envelope was missing) or undecodable; it
// is then kept verbatim. f.FailedAt defaults to the Store's clock. The id
// stays in the dedupe window.
func (s Dead) Kill(ctx context.Context, queue, id string, raw []byte, f drover.Failure) error {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return fmt.Errorf("dead-letter %s: %w", id, err)
	}
	if id == "" {
		return fmt.Errorf("dead-letter in %s: empty id", queue)
	}
	if f.FailedAt.IsZero() {
		f.FailedAt = s.clock.Now().UTC()
	}
	record, err := deadRecord(queue, id, raw, f)
	if err != nil {
		return fmt.Errorf("dead-letter %s in %s: %w", id, queue, err)
	}
	keys := []string{qk.log, qk.msg, qk.delayed, qk.dead, qk.deadmsg, qk.attempts}
	if err := s.runConfirmed(ctx, killScript, id, keys, id, record, f.FailedAt.UnixMilli()); err != nil {
		return fmt.Errorf("dead-letter %s in %s: %w", id, queue, err)
	}
	return nil
}

// DeadLetter is Kill for a drover.DeadLetter (the worker's form): it stores
// d.Message's envelope (its last attempt) when set, else d.Raw as read.
func (s Log) DeadLetter(ctx context.Context, queue string, d drover.DeadLetter) error {
	raw := d.Raw
	id := d.ID
	if d.Message != nil {
		if id == "" {
			id = d.Message.ID
		}
		c := *d.Message
		c.Position = 0
		env, err := c.MarshalJSON()
		if err != nil {
			return fmt.Errorf("dead-letter %s in %s: encode envelope: %w", id, queue, err)
		}
		raw = env
	}
	return Dead{s.core}.Kill(ctx, queue, id, raw, d.Failure)
}

// deadRecord builds the :deadmsg value.
func deadRecord(queue, id string, raw []byte, f drover.Failure) ([]byte, error) {
	fields := map[string]json.RawMessage{}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &fields) == nil {
		// An envelope object: keep every field, add the failure's.
	} else {
		fields = map[string]json.RawMessage{}
		idJSON, _ := json.Marshal(id)
		queueJSON, _ := json.Marshal(queue)
		fields["id"], fields["queue"] = idJSON, queueJSON
		switch {
		case raw == nil:
			fields[rawEnvelopeField] = json.RawMessage("null")
		case utf8.Valid(raw):
			v, _ := json.Marshal(string(raw))
			fields[rawEnvelopeField] = v
		default:
			v, _ := json.Marshal(base64.StdEncoding.EncodeToString(raw))
			fields[rawEnvelopeB64Field] = v
		}
	}
	fb, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encode failure: %w", err)
	}
	var ff map[string]json.RawMessage
	if err := json.Unmarshal(fb, &ff); err != nil {
		return nil, fmt.Errorf("encode failure: %w", err)
	}
	for _, k := range failureFields {
		delete(fields, k)
	}
	for k, v := range ff {
		fields[k] = v
	}
	return json.Marshal(fields)
}

// parseDeadRecord turns a :deadmsg value back into a DeadLetter. It never
// fails: what cannot be decoded is returned in Raw with Message nil.
func parseDeadRecord(id string, record []byte) drover.DeadLetter {
	dl := drover.DeadLetter{ID: id}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(record, &fields); err != nil {
		dl.Raw = record
		dl.Failure.Reason = "undecodable dead-letter record"
		return dl
	}
	_ = json.Unmarshal(record, &dl.Failure) // best effort: fields may be missing
	if v, ok := fields[rawEnvelopeField]; ok {
		var s *string
		if json.Unmarshal(v, &s) == nil && s != nil {
			dl.Raw = []byte(*s)
		}
		return dl
	}
	if v, ok := fields[rawEnvelopeB64Field]; ok {
		var s string
		if json.Unmarshal(v, &s) == nil {
			dl.Raw, _ = base64.StdEncoding.DecodeString(s)
		}
		return dl
	}
	for _, k := range failureFields {
		delete(fields, k)
	}
	env, err := json.Marshal(fields)
	if err != nil {
		dl.Raw = record
		return dl
	}
	dl.Raw = env
	if m, err := decodeEnvelope(env); err == nil {
		dl.Message = m
	}
	return dl
}

// DeadLetters lists up to limit dead letters of queue, newest first,
// skipping the first offset (for paging). limit <= 0 means 100.
func (s Dead) DeadLetters(ctx context.Context, queue string, offset, limit int) ([]drover.DeadLetter, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	ids, _, records, err := s.zpage(ctx, qk.dead, qk.deadmsg, offset, limit, true)
	if err != nil {
		return nil, fmt.Errorf("list dead letters of %s: %w", queue, err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	out := make([]drover.DeadLetter, 0, len(ids))
	for i, id := range ids {
		rec, ok := records[i].(string)
		if !ok {
			continue // purged between the two reads
		}
		out = append(out, parseDeadRecord(id, []byte(rec)))
	}
	return out, nil
}

// GetDeadLetter returns one dead letter of queue, or an error wrapping
// drover.ErrNotFound.
func (s Dead) GetDeadLetter(ctx context.Context, queue, id string) (drover.DeadLetter, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return drover.DeadLetter{}, fmt.Errorf("get dead letter %s: %w", id, err)
	}
	rec, err := s.rdb.HGet(ctx, qk.deadmsg, id).Bytes()
	if errNil(err) {
		return drover.DeadLetter{}, fmt.Errorf("get dead letter %s of %s: %w", id, queue, drover.ErrNotFound)
	}
	if err != nil {
		return drover.DeadLetter{}, fmt.Errorf("get dead letter %s of %s: %w", id, queue, err)
	}
	return parseDeadRecord(id, rec), nil
}

// RetryDead puts a dead letter back at the end of its queue with attempt 0,
// under the same id (bypassing the dedupe window), and removes it from the
// dead letters, atomically. It fails with drover.ErrNotFound when id is not
// a dead letter, with drover.ErrPoison when its envelope cannot be decoded,
// and when the id is pending in the queue again.
func (s Dead) RetryDead(ctx context.Context, queue, id string) (EnqueueResult, error) {
	dl, err := s.GetDeadLetter(ctx, queue, id)
	if err != nil {
		return EnqueueResult{}, fmt.Errorf("retry dead letter: %w", err)
	}
	if dl.Message == nil {
		return EnqueueResult{}, fmt.Errorf("retry dead letter %s of %s: %w", id, queue, drover.ErrPoison)
	}
	m := dl.Message
	m.Attempt = 0
	m.Queue = queue
	env, err := m.MarshalJSON()
	if err != nil {
		return EnqueueResult{}, fmt.Errorf("retry dead letter %s of %s: encode envelope: %w", id, queue, err)
	}
	qk := s.keys.queue(queue)
	wake := ""
	if s.wakeups {
		wake = s.keys.unownedChannel()
	}
	keys := []string{qk.log, qk.msg, qk.seq, qk.dead, qk.deadmsg, qk.owner}
	pos, err := s.run(ctx, retryDeadScript, keys, id, env, wake, queue).Int64()
	switch {
	case err != nil:
		return EnqueueResult{}, fmt.Errorf("retry dead letter %s of %s: %w", id, queue, err)
	case pos == -1:
		return EnqueueResult{}, fmt.Errorf("retry dead letter %s of %s: %w", id, queue, drover.ErrNotFound)
	case pos == -2:
		return EnqueueResult{}, fmt.Errorf("retry dead letter %s of %s: the id is pending in the queue again", id, queue)
	}
	return EnqueueResult{ID: id, Position: drover.Position(pos)}, nil
}

// PurgeDead deletes one dead letter of queue; false if there was none.
func (s Dead) PurgeDead(ctx context.Context, queue, id string) (bool, error) {
	if id == "" {
		return false, fmt.Errorf("purge dead letter of %s: empty id", queue)
	}
	n, err := s.purgeDead(ctx, queue, id)
	return n == 1, err
}

// PurgeAllDead deletes every dead letter of queue and returns how many.
func (s Dead) PurgeAllDead(ctx context.Context, queue string) (int, error) {
	return s.purgeDead(ctx, queue, "")
}

func (s Dead) purgeDead(ctx context.Context, queue, id string) (int, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return 0, fmt.Errorf("purge dead letters: %w", err)
	}
	n, err := s.run(ctx, purgeDeadScript, []string{qk.dead, qk.deadmsg}, id).Int()
	if err != nil {
		return 0, fmt.Errorf("purge dead letters of %s: %w", queue, err)
	}
	return n, nil
}
