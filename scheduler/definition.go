package scheduler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/drover-dev/drover"
)

// Schedule types (Spec.Type).
const (
	TypeInterval = "interval" // every Spec.Every, aligned to the Unix epoch or relative to the last run
	TypeCron     = "cron"     // a crontab line in a time zone
	TypeAt       = "at"       // once, at Spec.At
)

// Catchup says what happens to slots missed while no scheduler was firing
// (downtime, failover). See docs/scheduler.md.
type Catchup string

// Catch-up policies.
const (
	// CatchupOnce fires the most recent missed slot once (the default).
	CatchupOnce Catchup = "once"
	// CatchupSkip fires none of the missed slots and goes on with the next
	// future slot. A slot is missed when it is more than Config.MisfireGrace late.
	CatchupSkip Catchup = "skip"
	// CatchupAll fires every missed slot, oldest first, at most
	// Config.CatchupLimit of them (the most recent ones).
	CatchupAll Catchup = "all"
)

// Definition is one schedule entry as a person or a program writes it: which
// task to enqueue where, and when. It is stored as JSON in the `definition`
// field of the hash drover:sched:<name> (docs/scheduler.md). The zero value
// of every field but Name, Queue, Task and Schedule means the default.
type Definition struct {
	Name     string          // the entry's name: 1–200 bytes, no '/', ':', braces, space or control characters
	Queue    string          // the queue the task is enqueued to
	Task     string          // the task name
	Args     json.RawMessage // the task's arguments, any JSON; nil for none
	Schedule Spec            // when it fires
	// Disabled stops the entry from firing without removing it. On the wire
	// it is "enabled": false (absent means enabled).
	Disabled bool
	Catchup  Catchup       // what to do with missed slots; "" means CatchupOnce
	Jitter   time.Duration // delay every fire by a fixed amount in [0, Jitter], derived from Name; whole seconds
}

// Spec says when an entry fires. Which fields apply depends on Type.
type Spec struct {
	Type string // TypeInterval, TypeCron or TypeAt

	// Every is the interval (TypeInterval): a whole number of seconds, at
	// least one second.
	Every time.Duration
	// Relative (TypeInterval) measures Every from the last run instead of
	// aligning slots to multiples of Every since the Unix epoch.
	Relative bool

	// Expr is the crontab line (TypeCron): five fields (minute hour
	// day-of-month month day-of-week), or six with a leading seconds field,
	// or a descriptor (@yearly, @monthly, @weekly, @daily, @hourly,
	// @every <duration>).
	Expr string
	// Timezone is the IANA time zone Expr is read in (TypeCron); "" means UTC.
	Timezone string

	// At is the one instant a TypeAt entry fires at (whole seconds).
	At time.Time
}

// wireDefinition is the JSON form of Definition. Durations and times are
// strings so that a bad value is reported with its field's name.
type wireDefinition struct {
	Name     string          `json:"name,omitempty"`
	Queue    string          `json:"queue"`
	Task     string          `json:"task"`
	Args     json.RawMessage `json:"args,omitempty"`
	Schedule wireSpec        `json:"schedule"`
	Enabled  *bool           `json:"enabled,omitempty"`
	Catchup  string          `json:"catchup,omitempty"`
	Jitter   string          `json:"jitter,omitempty"`
}

type wireSpec struct {
	Type     string `json:"type"`
	Every    string `json:"every,omitempty"`
	Relative bool   `json:"relative,omitempty"`
	Expr     string `json:"expr,omitempty"`
	Timezone string `json:"timezone,omitempty"`
	At       string `json:"at,omitempty"`
}

// MarshalJSON writes the wire form documented in docs/scheduler.md.
func (d Definition) MarshalJSON() ([]byte, error) {
	enabled := !d.Disabled
	w := wireDefinition{
		Name: d.Name, Queue: d.Queue, Task: d.Task, Args: d.Args,
		Schedule: wireSpec{
			Type: d.Schedule.Type, Relative: d.Schedule.Relative,
			Expr: d.Schedule.Expr, Timezone: d.Schedule.Timezone,
		},
		Enabled: &enabled,
		Catchup: string(d.Catchup),
	}
	if d.Schedule.Every != 0 {
		w.Schedule.Every = d.Schedule.Every.String()
	}
	if !d.Schedule.At.IsZero() {
		w.Schedule.At = d.Schedule.At.UTC().Format(time.RFC3339)
	}
	if d.Jitter != 0 {
		w.Jitter = d.Jitter.String()
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the wire form. It rejects unknown fields (a misspelt
// "timezon" must not silently mean UTC) and reports a bad value with its
// field's name; it does not validate the definition as a whole (Validate
// does).
func (d *Definition) UnmarshalJSON(data []byte) error {
	def, err := decodeDefinition(data)
	if err != nil {
		return err
	}
	*d = def
	return nil
}

// ParseDefinition decodes a stored definition and validates it. Every error
// is a *FieldError naming the field at fault, and wraps
// drover.ErrInvalidConfig.
func ParseDefinition(data []byte) (Definition, error) {
	def, err := decodeDefinition(data)
	if err != nil {
		return Definition{}, err
	}
	if err := def.Validate(); err != nil {
		return Definition{}, err
	}
	return def, nil
}

func decodeDefinition(data []byte) (Definition, error) {
	var w wireDefinition
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Definition{}, jsonFieldError(err)
	}
	if dec.More() {
		return Definition{}, fieldErr("definition", "trailing data after the JSON object")
	}
	d := Definition{
		Name: w.Name, Queue: w.Queue, Task: w.Task, Args: w.Args,
		Schedule: Spec{
			Type: w.Schedule.Type, Relative: w.Schedule.Relative,
			Expr: w.Schedule.Expr, Timezone: w.Schedule.Timezone,
		},
		Disabled: w.Enabled != nil && !*w.Enabled,
		Catchup:  Catchup(w.Catchup),
	}
	if bytes.Equal(bytes.TrimSpace(d.Args), []byte("null")) {
		d.Args = nil
	}
	var err error
	if w.Schedule.Every != "" {
		if d.Schedule.Every, err = time.ParseDuration(w.Schedule.Every); err != nil {
			return Definition{}, fieldErr("schedule.every", "%v", err)
		}
	}
	if w.Jitter != "" {
		if d.Jitter, err = time.ParseDuration(w.Jitter); err != nil {
			return Definition{}, fieldErr("jitter", "%v", err)
		}
	}
	if w.Schedule.At != "" {
		if d.Schedule.At, err = time.Parse(time.RFC3339, w.Schedule.At); err != nil {
			return Definition{}, fieldErr("schedule.at", "want an RFC 3339 time like \"2030-01-02T15:04:05Z\", have %q", w.Schedule.At)
		}
	}
	return d, nil
}

// jsonFieldError turns a decoding error into a FieldError naming the field
// when encoding/json says which one it is.
func jsonFieldError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fieldErr(te.Field, "want a JSON %s, have %s", jsonKind(te.Type.Kind().String()), te.Value)
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		return fieldErr("definition", "%s", strings.TrimPrefix(msg, "json: "))
	}
	return fieldErr("definition", "not valid JSON: %v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "struct", "map":
		return "object"
	case "bool":
		return "boolean"
	}
	return goKind
}

// Validate checks every field and returns the first problem as a
// *FieldError (wrapping drover.ErrInvalidConfig) naming the field, e.g.
// `schedule.timezone: unknown time zone "Mars/Base"`.
func (d Definition) Validate() error {
	if err := drover.ValidateQueueName(d.Name); err != nil {
		return nameError("name", err)
	}
	if err := drover.ValidateQueueName(d.Queue); err != nil {
		return nameError("queue", err)
	}
	if d.Task == "" {
		return fieldErr("task", "required")
	}
	if len(d.Args) > 0 && !json.Valid(d.Args) {
		return fieldErr("args", "not valid JSON")
	}
	switch d.Catchup {
	case "", CatchupOnce, CatchupSkip, CatchupAll:
	default:
		return fieldErr("catchup", "want %q, %q or %q, have %q", CatchupOnce, CatchupSkip, CatchupAll, d.Catchup)
	}
	if d.Jitter < 0 {
		return fieldErr("jitter", "must not be negative, have %s", d.Jitter)
	}
	if d.Jitter%time.Second != 0 {
		return fieldErr("jitter", "must be a whole number of seconds, have %s", d.Jitter)
	}
	_, err := compileSpec(d.Schedule)
	return err
}

// catchup returns the entry's policy with the default filled in.
func (d Definition) catchup() Catchup {
	if d.Catchup == "" {
		return CatchupOnce
	}
	return d.Catchup
}

// FieldError is a validation error that names the definition field at fault
// ("schedule.expr", "schedule.timezone", …).
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the cause and drover.ErrInvalidConfig, so that
// errors.Is(err, drover.ErrInvalidConfig) holds for every validation error.
func (e *FieldError) Unwrap() []error { return []error{e.Err, drover.ErrInvalidConfig} }

// nameError rewords a drover.ValidateQueueName error for field.
func nameError(field string, err error) error {
	why := strings.TrimPrefix(err.Error(), drover.ErrInvalidQueueName.Error()+": ")
	return &FieldError{Field: field, Err: fmt.Errorf("invalid (%s)", why)}
}

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}
