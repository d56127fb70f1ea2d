package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/scheduler"
)

// Schedule is one schedule entry as the console shows it.
type Schedule struct {
	Name       string          `json:"name"`
	State      scheduler.State `json:"state"`
	Next       *time.Time      `json:"next,omitempty"`
	Definition json.RawMessage `json:"definition"`
	Meta       scheduler.Meta  `json:"meta"`
	// Error says why an invalid entry is invalid.
	Error string `json:"error,omitempty"`
	// Queue, Task and When are the definition's for display.
	Queue string `json:"-"`
	Task  string `json:"-"`
	When  string `json:"-"`
}

// ScheduleOf is en as the console and `drover ctl schedule -o json` show it.
func ScheduleOf(en scheduler.Entry) Schedule {
	out := Schedule{Name: en.Name, State: en.State, Meta: en.Meta, Definition: en.Raw,
		Queue: en.Definition.Queue, Task: en.Definition.Task, When: DescribeSpec(en.Definition.Schedule)}
	if en.State != scheduler.StateInvalid {
		if b, err := json.Marshal(en.Definition); err == nil {
			out.Definition = b
		}
	}
	if !en.Next.IsZero() {
		n := en.Next.UTC()
		out.Next = &n
	}
	if en.Err != nil {
		out.Error = en.Err.Error()
	}
	switch {
	case len(out.Definition) == 0:
		out.Definition = json.RawMessage("null")
	case !json.Valid(out.Definition):
		// A definition that is not JSON (written by hand or by another
		// language) is shown as the string it is, so the views needed to
		// inspect it still encode.
		b, _ := json.Marshal(string(out.Definition))
		out.Definition = b
	}
	return out
}

// DescribeSpec says when a schedule fires, for people.
func DescribeSpec(s scheduler.Spec) string {
	switch s.Type {
	case scheduler.TypeInterval:
		if s.Relative {
			return "every " + s.Every.String() + " after the last run"
		}
		return "every " + s.Every.String()
	case scheduler.TypeCron:
		tz := s.Timezone
		if tz == "" {
			tz = "UTC"
		}
		return "cron " + s.Expr + " " + tz
	case scheduler.TypeAt:
		return "at " + s.At.UTC().Format(time.RFC3339)
	}
	return s.Type
}

// List lists every entry, invalid ones with the reason.
func (o Schedules) List(ctx context.Context) ([]Schedule, error) {
	entries, err := o.sched.List(ctx)
	if err != nil {
		return nil, err
	}
	return mapSlice(entries, ScheduleOf), nil
}

// Get reads one entry.
func (o Schedules) Get(ctx context.Context, name string) (Schedule, error) {
	en, err := o.sched.Get(ctx, name)
	if err != nil {
		return Schedule{}, err
	}
	return ScheduleOf(en), nil
}

// SetEnabled enables or disables an entry.
func (o Schedules) SetEnabled(ctx context.Context, name string, enabled bool) error {
	if enabled {
		return o.sched.Enable(ctx, name)
	}
	return o.sched.Disable(ctx, name)
}

// Put adds the entry, or replaces it when it exists.
func (o Schedules) Put(ctx context.Context, def scheduler.Definition) error {
	if err := def.Validate(); err != nil {
		return err
	}
	if _, err := o.sched.Get(ctx, def.Name); err == nil {
		return o.sched.Update(ctx, def)
	}
	return o.sched.Add(ctx, def)
}

// Add adds the entry; it fails with scheduler.ErrExists when one of that
// name exists (Put replaces it).
func (o Schedules) Add(ctx context.Context, def scheduler.Definition) error {
	if err := def.Validate(); err != nil {
		return err
	}
	return o.sched.Add(ctx, def)
}

// Remove deletes an entry.
func (o Schedules) Remove(ctx context.Context, name string) error {
	return o.sched.Remove(ctx, name)
}

// Trigger enqueues one job of the entry now, outside its slots: the entry's
// queue, task and arguments under the id sched:<name>:manual-<unix ms>. The
// entry's next slot is not changed. An invalid entry cannot be triggered.
func (o Schedules) Trigger(ctx context.Context, name string) (queue.EnqueueResult, error) {
	en, err := o.sched.Get(ctx, name)
	if err != nil {
		return queue.EnqueueResult{}, err
	}
	if en.State == scheduler.StateInvalid {
		return queue.EnqueueResult{}, fmt.Errorf("%w: trigger %s: the entry is invalid: %v", ErrRefused, name, en.Err)
	}
	now := o.now().UTC()
	def := en.Definition
	m := &drover.Message{ID: fmt.Sprintf("sched:%s:manual-%d", name, now.UnixMilli()), Queue: def.Queue, Task: def.Task,
		Args: def.Args, EnqueuedAt: now, Schedule: name, FireAt: now, Headers: map[string]string{"triggered": "manual"}}
	return o.store.Producer().Enqueue(ctx, m)
}
