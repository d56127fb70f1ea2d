package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/queue"
)

// Parked queues (drover.OnFailurePark; docs/one-queue-per-key.md, "Parking
// a queue"): an ordered queue whose head used its attempts pauses itself
// with the head in its pause flag. An operator looks at the head, retries
// it (its args edited or not) or moves it to the dead letters, and resumes.
// Each action names the head's id, so that it acts on the message the
// operator looked at; the callers audit every action.

// ParkedQueue is a queue parked at a failed head.
type ParkedQueue struct {
	Queue string       `json:"queue"`
	Pause drover.Pause `json:"pause"`
	// Message is the head as the log holds it now (ParkedHead only).
	Message *Message `json:"message,omitempty"`
}

// ParkedQueues lists the queues parked at a failed head, by name.
func (o Jobs) ParkedQueues(ctx context.Context) ([]ParkedQueue, error) {
	ps, err := o.zk.Pauses().Read(ctx)
	if err != nil {
		return nil, err
	}
	var out []ParkedQueue
	for q, p := range ps.Queues {
		if p.Head != nil {
			out = append(out, ParkedQueue{Queue: q, Pause: p})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	return out, nil
}

// ParkedHead returns q's pause flag and its head message. It fails with
// ErrRefused when q is not parked at a failed head.
func (o Jobs) ParkedHead(ctx context.Context, q string) (ParkedQueue, error) {
	if err := o.knownQueue(ctx, q); err != nil {
		return ParkedQueue{}, err
	}
	ps, err := o.zk.Pauses().Read(ctx)
	if err != nil {
		return ParkedQueue{}, err
	}
	p, ok := ps.Queues[q]
	if !ok || p.Head == nil {
		return ParkedQueue{}, fmt.Errorf("%w: queue %s is not parked at a failed head", ErrRefused, q)
	}
	pq := ParkedQueue{Queue: q, Pause: p}
	if m, err := (Messages{o.core}).Message(ctx, q, p.Head.ID); err == nil {
		pq.Message = &m
	} else if !IsNotFound(err) {
		return ParkedQueue{}, err
	}
	return pq, nil
}

// parkedAt checks that q is parked at head id and returns its flag.
func (o Jobs) parkedAt(ctx context.Context, q, id string) (ParkedQueue, error) {
	if id == "" {
		return ParkedQueue{}, badInput("empty message id: name the parked head (ctl parked show)")
	}
	pq, err := o.ParkedHead(ctx, q)
	if err != nil {
		return ParkedQueue{}, err
	}
	if pq.Pause.Head.ID != id {
		return ParkedQueue{}, fmt.Errorf("%w: queue %s is parked at %s, not %s", ErrRefused, q, pq.Pause.Head.ID, id)
	}
	if pq.Message == nil || pq.Message.State != queue.StatePending || pq.Message.Done {
		return ParkedQueue{}, fmt.Errorf("%w: the parked head %s of %s is no longer in the log (moved to the dead letters already?)", ErrRefused, id, q)
	}
	return pq, nil
}

// RetryParked runs the parked head id of q again, with fresh attempts:
// with args (JSON) in place of its args when args is not nil, then resumes
// the queue unless keepPaused. Nothing behind the head runs before it
// succeeds or is moved to the dead letters.
func (o Jobs) RetryParked(ctx context.Context, q, id string, args json.RawMessage, keepPaused bool) error {
	pq, err := o.parkedAt(ctx, q, id)
	if err != nil {
		return err
	}
	if args != nil {
		if !json.Valid(args) {
			return badInput("args: not valid JSON")
		}
		m, err := drover.DecodeMessage(pq.Message.Envelope)
		if err != nil {
			return fmt.Errorf("%w: edit the args of %s: the stored envelope does not decode: %v", ErrRefused, id, err)
		}
		m.Args = args
		m.Attempt = 0
		raw, err := m.MarshalJSON()
		if err != nil {
			return fmt.Errorf("edit the args of %s: %w", id, err)
		}
		if err := o.store.Operator().ReplaceEnvelope(ctx, q, id, raw); err != nil {
			return err
		}
	}
	if keepPaused {
		return nil
	}
	return o.zk.Pauses().Clear(ctx, drover.PauseQueue, q)
}

// SkipParked moves the parked head id of q to the dead letters, with its
// failure and who moved it, then resumes the queue unless keepPaused: the
// next message becomes the head. With keepPaused the queue's flag becomes
// a plain pause by who (naming no head): the queue is paused, not parked.
func (o Jobs) SkipParked(ctx context.Context, q, id, who string, keepPaused bool) error {
	pq, err := o.parkedAt(ctx, q, id)
	if err != nil {
		return err
	}
	h := pq.Pause.Head
	f := drover.Failure{
		Reason:   fmt.Sprintf("%s (parked; moved to the dead letters by %s)", h.Error, who),
		ExitCode: h.ExitCode, FailedAt: o.now().UTC(),
	}
	raw := []byte(pq.Message.Envelope)
	if raw == nil && pq.Message.Raw != "" {
		raw = []byte(pq.Message.Raw) // kept verbatim, as the worker keeps poison
	}
	if err := o.store.Dead().Kill(ctx, q, id, raw, f); err != nil {
		return err
	}
	if keepPaused {
		// Paused, no longer parked: the flag must not name the head that
		// left the log, or retry and skip would refuse until a resume.
		return o.zk.Pauses().Set(ctx, drover.PauseQueue, q, drover.Pause{
			By: who, At: o.now().UTC(),
			Reason: fmt.Sprintf("parked head %s moved to the dead letters; kept paused (resume runs the next message)", id),
		})
	}
	return o.zk.Pauses().Clear(ctx, drover.PauseQueue, q)
}

// BadInput is an error of the caller's input (IsBadInput), for callers that
// parse input of their own for these operations (the HTTP API's forms).
func BadInput(format string, a ...any) error { return badInput(format, a...) }
