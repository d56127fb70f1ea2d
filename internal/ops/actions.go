package ops

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
)

// Pause sets the pause flag of scope and name (a queue, a member, or
// everything with name ""), by who, with reason. Owners stop starting tasks
// and keep their claims: nothing is rebalanced. A reason longer than
// drover.MaxReasonBytes or holding control characters is refused
// (ErrBadInput) before anything is written.
func (o Queues) Pause(ctx context.Context, scope drover.PauseScope, name, who, reason string) error {
	if err := drover.CheckReason("reason", reason); err != nil {
		return err
	}
	if err := o.checkScope(ctx, scope, name); err != nil {
		return err
	}
	return o.zk.Pauses().Set(ctx, scope, name, drover.Pause{By: who, At: o.now().UTC(), Reason: reason})
}

// Resume clears the pause flag of scope and name; resuming what is not
// paused is not an error.
func (o Queues) Resume(ctx context.Context, scope drover.PauseScope, name string) error {
	if err := o.checkScope(ctx, scope, name); err != nil {
		return err
	}
	return o.zk.Pauses().Clear(ctx, scope, name)
}

func (o *core) checkScope(ctx context.Context, scope drover.PauseScope, name string) error {
	switch scope {
	case drover.PauseQueue:
		return o.knownQueue(ctx, name)
	case drover.PauseMember:
		if name == "" || strings.ContainsAny(name, "/ \t") {
			return badInput("member name %q", name)
		}
		return nil
	case drover.PauseAll:
		return nil
	}
	return badInput("pause scope %q", scope)
}

// Revoke deletes a delayed message on behalf of who, keeping the
// "revoked" outcome record the queue's configuration asks for (the
// default when it has none or ZooKeeper cannot say); it fails with
// drover.ErrNotFound when id is not delayed (unknown or already promoted).
func (o Messages) Revoke(ctx context.Context, q, id, who string) error {
	if err := o.knownQueue(ctx, q); err != nil {
		return err
	}
	var policy drover.Outcomes
	if qe, err := o.zk.Queues().Get(ctx, q); err == nil {
		policy = qe.Config.Outcomes
	}
	ok, err := o.store.Operator().RevokeRecording(ctx, q, id, policy, who)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("revoke %s of %s: not a delayed message (unknown, or promoted already): %w", id, q, drover.ErrNotFound)
	}
	return nil
}

// RunNow moves a delayed message into the log at once and returns its
// position.
func (o Messages) RunNow(ctx context.Context, q, id string) (drover.Position, error) {
	if err := o.knownQueue(ctx, q); err != nil {
		return 0, err
	}
	return o.store.Operator().RunNow(ctx, q, id)
}

// RetryDead puts a dead letter back at the end of its queue with attempt 0.
func (o Messages) RetryDead(ctx context.Context, q, id string) (drover.Position, error) {
	if err := o.knownQueue(ctx, q); err != nil {
		return 0, err
	}
	r, err := o.store.Dead().RetryDead(ctx, q, id)
	if err != nil && !IsNotFound(err) && !errors.Is(err, drover.ErrPoison) {
		return 0, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return r.Position, err
}

// PurgeDead deletes one dead letter (id) or all of q's (id ""), and returns
// how many.
func (o Messages) PurgeDead(ctx context.Context, q, id string) (int, error) {
	if err := o.knownQueue(ctx, q); err != nil {
		return 0, err
	}
	if id == "" {
		return o.store.Dead().PurgeAllDead(ctx, q)
	}
	ok, err := o.store.Dead().PurgeDead(ctx, q, id)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("purge dead letter %s of %s: %w", id, q, drover.ErrNotFound)
	}
	return 1, nil
}

// ResetTarget says where an offset reset goes: exactly one of the fields.
type ResetTarget struct {
	Earliest bool
	Latest   bool
	Time     time.Time
	Position *drover.Position
}

// ParseResetTarget reads "earliest", "latest", a time (RFC 3339 or
// "YYYY-MM-DD HH:MM[:SS]" UTC) or a position (digits).
func ParseResetTarget(to string) (ResetTarget, error) {
	to = strings.TrimSpace(to)
	switch to {
	case "":
		return ResetTarget{}, badInput("reset: want to = earliest, latest, a time or a position")
	case "earliest":
		return ResetTarget{Earliest: true}, nil
	case "latest":
		return ResetTarget{Latest: true}, nil
	}
	if p, err := strconv.ParseInt(to, 10, 64); err == nil {
		if p < 0 {
			return ResetTarget{}, badInput("reset to position %d: want ≥ 0", p)
		}
		pos := drover.Position(p)
		return ResetTarget{Position: &pos}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, to); err == nil {
			return ResetTarget{Time: t}, nil
		}
	}
	return ResetTarget{}, badInput("reset to %q: want earliest, latest, a position, or a time like 2024-05-01T10:00:00Z or \"2024-05-01 10:00\"", to)
}

// ResetPreview is what an offset reset does (or did).
type ResetPreview struct {
	Queue  string          `json:"queue"`
	From   drover.Position `json:"from"`
	To     drover.Position `json:"to"`
	Run    int64           `json:"messages_to_run"` // messages after the new offset
	Before int64           `json:"messages_before"` // lag before the reset
	Owner  string          `json:"owner,omitempty"`
	Paused bool            `json:"paused"`
	DryRun bool            `json:"dry_run"`
	// Version is the offset node's version after the reset (not dry run).
	Version int32 `json:"version,omitempty"`
	// Warning says what the operator may not expect (no retention, owned).
	Warning string `json:"warning,omitempty"`
}

// ResetOffset moves q's committed offset to target, by who. With dryRun it
// only computes the preview. It is refused (ErrRefused) while a member owns
// the queue and it is not paused; the owner of a paused queue is fenced by
// the reset and claims it again from the new offset.
func (o Queues) ResetOffset(ctx context.Context, q string, target ResetTarget, who string, dryRun bool) (ResetPreview, error) {
	if err := o.knownQueue(ctx, q); err != nil {
		return ResetPreview{}, err
	}
	views, err := o.zk.Queues().Views(ctx, []string{q}, true)
	if err != nil {
		return ResetPreview{}, err
	}
	cur := views[0]
	p := ResetPreview{Queue: q, From: cur.Offset.Position, To: cur.Offset.Position, Owner: cur.Owner, DryRun: dryRun}
	first, errFirst := o.store.Inspector().FirstPosition(ctx, q)
	last, errLast := o.store.Inspector().LastPosition(ctx, q)
	for _, err := range []error{errFirst, errLast} {
		if err != nil && !errors.Is(err, drover.ErrNotFound) {
			return p, err
		}
	}
	switch {
	case target.Earliest:
		if first > 0 {
			p.To = first - 1
		}
	case target.Latest:
		if last > 0 {
			p.To = last
		}
	case target.Position != nil:
		p.To = *target.Position
	case !target.Time.IsZero():
		pos, err := o.store.Inspector().PositionAt(ctx, q, target.Time)
		switch {
		case err == nil:
			p.To = pos
		case errors.Is(err, drover.ErrNotFound) && first > 0:
			p.To = first - 1
		case errors.Is(err, drover.ErrNotFound):
		default:
			return p, err
		}
	default:
		return p, badInput("reset: no target")
	}
	stats, err := o.store.Inspector().Stats(ctx, []string{q, q}, []drover.Position{p.From, p.To})
	if err != nil {
		return p, err
	}
	p.Before, p.Run = stats[0].Lag, stats[1].Lag
	opts := coordinator.ResetOptions{}
	if cur.Owner != "" {
		pauses, err := o.zk.Pauses().Read(ctx)
		if err != nil {
			return p, err
		}
		_, p.Paused = pauses.Paused(q, cur.Owner)
		if !p.Paused {
			p.Warning = "the queue is owned by " + cur.Owner + " and not paused: pause it first"
			if !dryRun {
				return p, fmt.Errorf("%w: reset offset of %s: owned by member %s and not paused; pause it first", ErrRefused, q, cur.Owner)
			}
		}
		opts.AllowOwned = true
	}
	if p.To < p.From && p.Warning == "" {
		if qe, err := o.zk.Queues().Get(ctx, q); err == nil && qe.Config.Retention == 0 {
			p.Warning = "the queue has no retention: done messages were trimmed, only those still in the log run again"
		}
	}
	if dryRun {
		return p, nil
	}
	if p.To < p.From {
		// The messages replayed are done: their recorded starts would count
		// against max_attempts again (a message that ran once with
		// max_attempts 1 would be dead-lettered unrun). Forgotten before
		// the offset moves, so no replayed start can read an old count.
		if _, err := o.store.Operator().ForgetStarts(ctx, q, p.To, p.From); err != nil {
			return p, err
		}
	}
	v, err := o.zk.Claims().ResetOffset(ctx, q, drover.Offset{Position: p.To, CommittedAt: o.now().UTC(), Member: "reset by " + who}, opts)
	if err != nil {
		return p, err
	}
	p.Version = v
	return p, nil
}

// SetConfig creates q's configuration or replaces it. version is the
// version read (from Queue) for an update, -1 to create.
func (o Queues) SetConfig(ctx context.Context, cfg drover.QueueConfig, version int32) (int32, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	if err := drover.CheckLabels("tags", cfg.Tags); err != nil {
		return 0, err
	}
	if version < 0 {
		if err := o.zk.Queues().Create(ctx, cfg); err != nil {
			if errors.Is(err, coordinator.ErrQueueExists) {
				return 0, fmt.Errorf("%w: %w", ErrRefused, err)
			}
			return 0, err
		}
		return 0, nil
	}
	return o.zk.Queues().Update(ctx, cfg, version)
}

// DeleteConfig removes q's configuration (its messages and offset
// stay).
func (o Queues) DeleteConfig(ctx context.Context, q string) error {
	if err := drover.ValidateQueueName(q); err != nil {
		return badInput("queue name: %v", err)
	}
	return o.zk.Queues().Delete(ctx, q)
}
