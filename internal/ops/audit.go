package ops

import (
	"context"
	"encoding/json"
	"time"
)

// AuditRecord is one mutation: who did what to which target, when, and how
// it ended.
type AuditRecord struct {
	At     time.Time `json:"at"`
	Who    string    `json:"who"`
	Role   string    `json:"role"`
	Via    string    `json:"via"`
	Remote string    `json:"remote,omitempty"`
	Action string    `json:"action"`
	Target string    `json:"target,omitempty"`
	Detail string    `json:"detail,omitempty"`
	// Result is "ok" or the error.
	Result string `json:"result"`
	Status int    `json:"status"`
}

// RecordAudit appends rec to the fleet's audit log (Redis, shared by every
// console server).
func (o *Ops) RecordAudit(ctx context.Context, rec AuditRecord) error {
	if rec.At.IsZero() {
		rec.At = o.now().UTC()
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return o.store.Operator().AppendAudit(ctx, b)
}

// Audit returns up to limit records, newest first, after skipping offset.
func (o *Ops) Audit(ctx context.Context, offset, limit int) ([]AuditRecord, error) {
	if offset < 0 {
		return nil, badInput("offset %d: want ≥ 0", offset)
	}
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	raw, err := o.store.Operator().Audit(ctx, offset, limit)
	if err != nil {
		return nil, err
	}
	out := make([]AuditRecord, 0, len(raw))
	for _, b := range raw {
		var r AuditRecord
		if json.Unmarshal(b, &r) == nil {
			out = append(out, r)
		}
	}
	return out, nil
}
