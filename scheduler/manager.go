package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
)

// Manager is the management API for schedule entries (add, update, remove,
// enable, disable, get, list); `drover ctl schedule …` wraps it. It needs no
// leadership: every change is written to the store and the leader plans the
// entry within its PollInterval. It is safe for concurrent use.
type Manager struct {
	catalog Catalog
}

// NewManager returns a Manager over catalog (queue.ScheduleStore).
func NewManager(catalog Catalog) *Manager { return &Manager{catalog: catalog} }

// Add validates def and stores it as a new entry. It returns a *FieldError
// for an invalid definition and ErrExists when the name is taken. The entry
// fires from its first slot at or after the moment the leader plans it.
func (m *Manager) Add(ctx context.Context, def Definition) error {
	return m.store(ctx, "add", def.Name, def, m.catalog.CreateSchedule)
}

// Update validates def and replaces the definition of the existing entry
// def.Name, keeping its meta (run count, last fire). The leader plans it
// again: its next slot is the first at or after the update that is later
// than its last fire. It returns drover.ErrNotFound when there is no such
// entry.
func (m *Manager) Update(ctx context.Context, def Definition) error {
	return m.store(ctx, "update", def.Name, def, m.catalog.ReplaceSchedule)
}

// Remove deletes the entry. Jobs it already enqueued stay in their queues.
// It returns drover.ErrNotFound when there is no such entry.
func (m *Manager) Remove(ctx context.Context, name string) error {
	if err := m.catalog.DeleteSchedule(ctx, name); err != nil {
		return fmt.Errorf("remove schedule %s: %w", name, err)
	}
	return nil
}

// Enable lets a disabled entry fire again, from its first slot at or after
// now (missed slots are not caught up). Enabling an enabled entry changes
// nothing. An invalid entry cannot be enabled: Update it.
func (m *Manager) Enable(ctx context.Context, name string) error {
	return m.setDisabled(ctx, name, false)
}

// Disable stops the entry from firing without removing it. Disabling a
// disabled entry changes nothing.
func (m *Manager) Disable(ctx context.Context, name string) error {
	return m.setDisabled(ctx, name, true)
}

func (m *Manager) setDisabled(ctx context.Context, name string, disabled bool) error {
	verb := map[bool]string{true: "disable", false: "enable"}[disabled]
	e, err := m.Get(ctx, name)
	if err != nil {
		return fmt.Errorf("%s schedule %s: %w", verb, name, err)
	}
	if e.State == StateInvalid {
		return fmt.Errorf("%s schedule %s: the stored definition is invalid (%w); update it instead", verb, name, e.Err)
	}
	if e.Definition.Disabled == disabled {
		return nil
	}
	e.Definition.Disabled = disabled
	return m.store(ctx, verb, name, e.Definition, m.catalog.ReplaceSchedule)
}

// Get returns one entry, with its state; an entry whose stored definition
// is malformed comes back with State StateInvalid and Err saying why. It
// returns drover.ErrNotFound when there is no such entry.
func (m *Manager) Get(ctx context.Context, name string) (Entry, error) {
	r, err := m.catalog.GetSchedule(ctx, name)
	if err != nil {
		return Entry{}, fmt.Errorf("get schedule %s: %w", name, err)
	}
	return entryOf(r), nil
}

// List returns every entry in name order, invalid ones included (State
// StateInvalid, Err set).
func (m *Manager) List(ctx context.Context) ([]Entry, error) {
	recs, err := m.catalog.ListSchedules(ctx)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	entries := make([]Entry, len(recs))
	for i, r := range recs {
		entries[i] = entryOf(r)
	}
	return entries, nil
}

// store validates def and writes its JSON as entry name through write (the
// catalog's create or replace). verb names the change in the error ("add
// schedule <name>: ..."); an invalid def fails with Validate's error as it
// is (a *FieldError).
func (m *Manager) store(ctx context.Context, verb, name string, def Definition, write func(ctx context.Context, name string, raw []byte) error) error {
	if err := def.Validate(); err != nil {
		return err
	}
	raw, err := json.Marshal(def)
	if err != nil {
		return err
	}
	if err := write(ctx, name, raw); err != nil {
		return fmt.Errorf("%s schedule %s: %w", verb, name, err)
	}
	return nil
}
