package ops

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/queue"
)

// Known checks that q exists (KnownQueue's rule); otherwise it fails
// with drover.ErrQueueNotFound, so that a typo does not act on a stray
// queue.
func (o Queues) Known(ctx context.Context, q string) error { return o.knownQueue(ctx, q) }

// QueueDetail is one queue with its configuration.
type QueueDetail struct {
	QueueRow
	Config        *drover.QueueConfig `json:"config,omitempty"`
	ConfigError   string              `json:"config_error,omitempty"`
	ConfigVersion int32               `json:"config_version"`
	LogFirst      drover.Position     `json:"log_first"`
}

// Queue reads one queue: its row (owner, offset, backlog, pause) and its
// configuration, at a cost independent of the number of queues.
func (o Queues) Queue(ctx context.Context, q string) (*QueueDetail, error) {
	if err := o.knownQueue(ctx, q); err != nil {
		return nil, err
	}
	views, stats, err := o.viewsAndStats(ctx, []string{q}, true)
	if err != nil {
		return nil, err
	}
	v, st := views[0], stats[0]
	an, err := o.zk.Assignments().Read(ctx)
	if err != nil {
		return nil, err
	}
	pauses, err := o.zk.Pauses().Read(ctx)
	if err != nil {
		return nil, err
	}
	d := &QueueDetail{QueueRow: queueRow(v, st, an.Assignment.Queues[q], pauses)}
	d.RateLimited = o.ownerRateLimited(ctx, q, d.Owner) // held.go
	switch qe, err := o.zk.Queues().Get(ctx, q); {
	case err == nil:
		d.Configured, d.Config, d.ConfigVersion = true, &qe.Config, qe.Version
	case errors.Is(err, drover.ErrQueueNotFound):
	default:
		d.Configured, d.ConfigError = true, err.Error()
	}
	if p, err := o.store.Inspector().FirstPosition(ctx, q); err == nil {
		d.LogFirst = p
	}
	return d, nil
}

// Message is one message as the console shows it.
type Message struct {
	ID       string          `json:"id"`
	State    string          `json:"state"`
	Position drover.Position `json:"position,omitempty"`
	Due      *time.Time      `json:"due,omitempty"`
	// Envelope is the stored envelope (JSON) when it is valid JSON.
	Envelope json.RawMessage `json:"envelope,omitempty"`
	// Raw is the stored envelope when it is not valid JSON.
	Raw     string          `json:"raw,omitempty"`
	Failure *drover.Failure `json:"failure,omitempty"`
	// Done is true for a pending-state message at or below the committed
	// offset (processed, kept by retention).
	Done bool `json:"done,omitempty"`
	// Attempts are the failures of the earlier attempts, oldest first,
	// from the envelope's history (drover.AttemptErrorsField).
	Attempts []drover.Failure `json:"attempts,omitempty"`
}

func envelopeOf(m *Message, raw []byte) {
	if raw == nil {
		return
	}
	if json.Valid(raw) {
		m.Envelope = json.RawMessage(raw)
		m.Attempts = attemptsOf(m.Envelope)
	} else {
		m.Raw = string(raw)
	}
}

// attemptsOf decodes an envelope's history of failed attempts; nil when it
// has none or it does not decode.
func attemptsOf(envelope json.RawMessage) []drover.Failure {
	var e map[string]json.RawMessage
	if json.Unmarshal(envelope, &e) != nil {
		return nil
	}
	var h []drover.Failure
	if json.Unmarshal(e[drover.AttemptErrorsField], &h) != nil {
		return nil
	}
	return h
}

// MaxPage is the most messages one listing returns.
const MaxPage = 500

func pageLimit(limit int) (int, error) {
	if limit < 1 || limit > MaxPage {
		return 0, badInput("limit %d: want 1 to %d", limit, MaxPage)
	}
	return limit, nil
}

// skipPage lists a page of a known queue q's entries that skips offset of
// them: it checks the paging and the queue, reads up to limit entries with
// read and makes each a Message with message.
func skipPage[T any](ctx context.Context, o *core, q string, offset, limit int,
	read func(ctx context.Context, q string, offset, limit int) ([]T, error), message func(T) Message) ([]Message, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, badInput("offset %d: want ≥ 0", offset)
	}
	if err := o.knownQueue(ctx, q); err != nil {
		return nil, err
	}
	entries, err := read(ctx, q, offset, limit)
	if err != nil {
		return nil, err
	}
	return mapSlice(entries, message), nil
}

// Pending lists up to limit messages waiting in q after position after (0:
// after the committed offset), in position order.
func (o Messages) Pending(ctx context.Context, q string, after drover.Position, limit int) ([]Message, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	if err := o.knownQueue(ctx, q); err != nil {
		return nil, err
	}
	if after == 0 {
		views, err := o.zk.Queues().Views(ctx, []string{q}, true)
		if err != nil {
			return nil, err
		}
		after = views[0].Offset.Position
	}
	entries, err := o.store.Log().ReadAfter(ctx, q, after, limit)
	if err != nil {
		return nil, err
	}
	return mapSlice(entries, pendingMessage), nil
}

func pendingMessage(e queue.Entry) Message {
	m := Message{ID: e.ID, State: queue.StatePending, Position: e.Position}
	envelopeOf(&m, e.Raw)
	return m
}

// Delayed lists up to limit delayed messages of q, soonest first, after
// skipping offset.
func (o Messages) Delayed(ctx context.Context, q string, offset, limit int) ([]Message, error) {
	return skipPage(ctx, o.core, q, offset, limit, o.store.Inspector().Delayed, delayedMessage)
}

func delayedMessage(e queue.DelayedEntry) Message {
	due := e.Due.UTC()
	m := Message{ID: e.ID, State: queue.StateDelayed, Due: &due}
	envelopeOf(&m, e.Raw)
	return m
}

// Dead lists up to limit dead letters of q, newest first, after skipping
// offset.
func (o Messages) Dead(ctx context.Context, q string, offset, limit int) ([]Message, error) {
	return skipPage(ctx, o.core, q, offset, limit, o.store.Dead().DeadLetters, deadMessage)
}

func deadMessage(dl drover.DeadLetter) Message {
	f := dl.Failure
	m := Message{ID: dl.ID, State: queue.StateDead, Failure: &f}
	switch {
	case dl.Message != nil:
		if b, err := json.Marshal(dl.Message); err == nil {
			m.Envelope = b
			m.Attempts = attemptsOf(b)
		}
	default:
		envelopeOf(&m, dl.Raw)
	}
	return m
}

// Message finds one message of q by id: pending, delayed or dead.
func (o Messages) Message(ctx context.Context, q, id string) (Message, error) {
	if id == "" {
		return Message{}, badInput("empty message id")
	}
	if err := o.knownQueue(ctx, q); err != nil {
		return Message{}, err
	}
	mi, err := o.store.Inspector().Message(ctx, q, id)
	if err != nil {
		return Message{}, err
	}
	switch mi.State {
	case queue.StateDead:
		return deadMessage(*mi.DeadLetter), nil
	case queue.StateDelayed:
		due := mi.Due.UTC()
		m := Message{ID: id, State: mi.State, Due: &due}
		envelopeOf(&m, mi.Raw)
		return m, nil
	}
	m := Message{ID: id, State: mi.State, Position: mi.Position}
	envelopeOf(&m, mi.Raw)
	if views, err := o.zk.Queues().Views(ctx, []string{q}, true); err == nil && mi.Position <= views[0].Offset.Position {
		m.Done = true
	}
	return m, nil
}
