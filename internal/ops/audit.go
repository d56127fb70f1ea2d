package ops

import (
	"context"
	"encoding/json"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/queue"
)

// AuditRecord is one mutation: who did what to which target, when, and how
// it ended. In the refusal stream it is one refused request, or the count
// of the refusals from one source in one minute (action "refusals").
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

// clipped returns rec with every field capped in bytes and its control and
// bidirectional characters escaped (drover.ClipText): whatever a client
// sent (a 1 MB Origin, a newline in a Host), a record is at most a few KB
// and reads as one line.
func (rec AuditRecord) clipped() AuditRecord {
	for _, f := range []*string{&rec.Who, &rec.Role, &rec.Via, &rec.Remote, &rec.Action, &rec.Target} {
		*f = drover.ClipText(*f, drover.MaxAuditFieldBytes)
	}
	rec.Detail = drover.ClipText(rec.Detail, drover.MaxAuditTextBytes)
	rec.Result = drover.ClipText(rec.Result, drover.MaxAuditTextBytes)
	return rec
}

// encode stamps rec with now when it has no time, caps it and encodes it.
func (rec AuditRecord) encode(now func() time.Time) ([]byte, error) {
	if rec.At.IsZero() {
		rec.At = now().UTC()
	}
	return json.Marshal(rec.clipped())
}

// Record appends rec to the fleet's audit log (Redis, shared by every
// console server), its fields capped (see AuditRecord.clipped).
func (o AuditLog) Record(ctx context.Context, rec AuditRecord) error {
	return WriteAudit(ctx, o.store.Operator(), rec, o.now)
}

// WriteAudit is RecordAudit for a process that has a queue store but no
// Ops (a worker's admin server): one format and one set of caps for every
// writer. now stamps a record without a time (nil: time.Now).
func WriteAudit(ctx context.Context, op queue.Operator, rec AuditRecord, now func() time.Time) error {
	if now == nil {
		now = time.Now
	}
	b, err := rec.encode(now)
	if err != nil {
		return err
	}
	return op.AppendAudit(ctx, b)
}

// RecordRefusals appends recs, in order, to the fleet's refusal stream (a
// capped list apart from the audit log: a flood of refusals cannot evict a
// mutation), their fields capped, in one round trip.
func (o AuditLog) RecordRefusals(ctx context.Context, recs ...AuditRecord) error {
	return WriteRefusals(ctx, o.store.Operator(), o.now, recs...)
}

// WriteRefusals is RecordRefusals for a process that has a queue store
// but no Ops (a console before its first ZooKeeper session). now stamps a
// record without a time (nil: time.Now).
func WriteRefusals(ctx context.Context, op queue.Operator, now func() time.Time, recs ...AuditRecord) error {
	if now == nil {
		now = time.Now
	}
	raw := make([][]byte, 0, len(recs))
	for _, rec := range recs {
		b, err := rec.encode(now)
		if err != nil {
			return err
		}
		raw = append(raw, b)
	}
	return op.AppendRefusals(ctx, raw...)
}

// Records returns up to limit records, newest first, after skipping offset.
func (o AuditLog) Records(ctx context.Context, offset, limit int) ([]AuditRecord, error) {
	return o.readAudit(ctx, offset, limit, o.store.Operator().Audit)
}

// Refusals returns up to limit records of the refusal stream, newest
// first, after skipping offset.
func (o AuditLog) Refusals(ctx context.Context, offset, limit int) ([]AuditRecord, error) {
	return o.readAudit(ctx, offset, limit, o.store.Operator().Refusals)
}

func (o *core) readAudit(ctx context.Context, offset, limit int, read func(context.Context, int, int) ([][]byte, error)) ([]AuditRecord, error) {
	if offset < 0 {
		return nil, badInput("offset %d: want ≥ 0", offset)
	}
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	raw, err := read(ctx, offset, limit)
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
