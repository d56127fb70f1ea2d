package queue

import (
	"context"
	"fmt"
)

// The refusal stream: a second capped list beside the audit log, for the
// records of refused requests (a missing or bad token, a role too low, a
// foreign Host, a cross-site request) and the per-source counts of those
// not recorded one by one. Anyone can be refused, so anyone can write
// here: keeping it apart from the audit log (AppendAudit) means a flood of
// refusals evicts only older refusals, never a mutation.

// RefusalLimit is how many records AppendRefusals keeps.
const RefusalLimit = 1000

// MaxAuditRecord bounds one record of the audit log or of the refusal
// stream (bytes of JSON). The writers (package internal/ops) cap every
// field well below it; it bounds what a caller that does not can store:
// AuditLimit × MaxAuditRecord and RefusalLimit × MaxAuditRecord.
const MaxAuditRecord = 16 << 10

// AppendRefusals adds records (JSON, written by the caller), in order, to
// the refusal stream, newest first, keeping the last RefusalLimit, in one
// round trip. A record longer than MaxAuditRecord is refused, and then
// none is written.
func (s Operator) AppendRefusals(ctx context.Context, records ...[]byte) error {
	if len(records) == 0 {
		return nil
	}
	vals := make([]any, len(records))
	for i, r := range records {
		if len(r) > MaxAuditRecord {
			return fmt.Errorf("append refusal record: %d bytes, at most %d", len(r), MaxAuditRecord)
		}
		vals[i] = r
	}
	pipe := s.rdb.TxPipeline()
	pipe.LPush(ctx, s.keys.auditRefusals(), vals...)
	pipe.LTrim(ctx, s.keys.auditRefusals(), 0, RefusalLimit-1)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("append refusal records: %w", err)
	}
	return nil
}

// Refusals returns up to limit records of the refusal stream, newest
// first, after skipping offset.
func (s Operator) Refusals(ctx context.Context, offset, limit int) ([][]byte, error) {
	start, stop := page(offset, limit)
	vals, err := s.rdb.LRange(ctx, s.keys.auditRefusals(), start, stop).Result()
	if err != nil {
		return nil, fmt.Errorf("read the refusal records: %w", err)
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}
