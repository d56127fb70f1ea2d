package scheduler

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Meta is what the scheduler records about an entry's fires, stored as JSON
// in the `meta` field of drover:sched:<name>:
//
//	{"last_run_at":"2030-01-02T15:04:05.123Z","total_run_count":42,"last_fire":1893596645}
//
// It is written after the entry's score has advanced, so after a crash at
// the wrong moment it can lag one fire behind the messages enqueued.
type Meta struct {
	LastRunAt     time.Time // when the scheduler last enqueued a fire of the entry
	TotalRunCount int64     // how many slots have fired
	LastFire      time.Time // the latest slot fired (whole seconds)
}

type wireMeta struct {
	LastRunAt     string `json:"last_run_at,omitempty"`
	TotalRunCount int64  `json:"total_run_count"`
	LastFire      int64  `json:"last_fire,omitempty"` // Unix seconds
}

// MarshalJSON writes the stored form shown above.
func (m Meta) MarshalJSON() ([]byte, error) {
	w := wireMeta{TotalRunCount: m.TotalRunCount}
	if !m.LastRunAt.IsZero() {
		w.LastRunAt = m.LastRunAt.UTC().Format(time.RFC3339Nano)
	}
	if !m.LastFire.IsZero() {
		w.LastFire = m.LastFire.Unix()
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the stored form.
func (m *Meta) UnmarshalJSON(data []byte) error {
	var w struct {
		LastRunAt     string  `json:"last_run_at"`
		TotalRunCount float64 `json:"total_run_count"` // Lua's cjson may write 1e+15
		LastFire      float64 `json:"last_fire"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("decode schedule meta: %w", err)
	}
	*m = Meta{TotalRunCount: int64(w.TotalRunCount)}
	if w.LastRunAt != "" {
		t, err := time.Parse(time.RFC3339Nano, w.LastRunAt)
		if err != nil {
			return fmt.Errorf("decode schedule meta: last_run_at: %w", err)
		}
		m.LastRunAt = t
	}
	if w.LastFire > 0 {
		m.LastFire = time.Unix(int64(w.LastFire), 0).UTC()
	}
	return nil
}

// State is where an entry stands, as List and Get show it.
type State string

// Entry states.
const (
	StateScheduled State = "scheduled" // waiting for its next slot (Entry.Next)
	StatePlanning  State = "planning"  // new or changed: the leader computes its first slot
	StateDisabled  State = "disabled"  // enabled: false
	StateFinished  State = "finished"  // no slot left (an at entry that fired)
	StateInvalid   State = "invalid"   // the stored definition is malformed (Entry.Err)
)

// Entry is a schedule entry as the management API shows it.
type Entry struct {
	Name string
	// Definition is the decoded definition; the zero value when State is
	// StateInvalid.
	Definition Definition
	Meta       Meta
	State      State
	// Next is when the entry fires next (its slot plus jitter offset);
	// zero unless State is StateScheduled.
	Next time.Time
	// Err says why the definition is invalid (StateInvalid): a *FieldError
	// naming the field.
	Err error
	// Raw is the stored definition, verbatim.
	Raw []byte
}

// entryOf decodes a stored record for the management API.
func entryOf(r Record) Entry {
	e := Entry{Name: r.Name, Raw: r.Definition}
	if len(r.Meta) > 0 {
		_ = json.Unmarshal(r.Meta, &e.Meta) // informational: a bad meta shows as zero
	}
	def, err := parseStored(r.Name, r.Definition)
	switch {
	case err != nil:
		e.State, e.Err = StateInvalid, err
		return e
	case def.Disabled:
		e.State = StateDisabled
	case r.Score <= ScorePlan:
		e.State = StatePlanning
	case math.IsInf(r.Score, 1):
		e.State = StateFinished
	default:
		e.State = StateScheduled
		e.Next = scoreTime(r.Score)
	}
	e.Definition = def
	return e
}

// parseStored decodes and validates the definition stored under name. The
// name inside the definition may be omitted (the key names the entry); if
// present it must match.
func parseStored(name string, raw []byte) (Definition, error) {
	if len(raw) == 0 {
		return Definition{}, fieldErr("definition", "missing: write the hash field \"definition\" before adding the name to the schedule index")
	}
	def, err := decodeDefinition(raw)
	if err != nil {
		return Definition{}, err
	}
	if def.Name == "" {
		def.Name = name
	} else if def.Name != name {
		return Definition{}, fieldErr("name", "%q does not match the entry's key %q", def.Name, name)
	}
	if err := def.Validate(); err != nil {
		return Definition{}, err
	}
	return def, nil
}

// scoreTime converts a finite score (Unix seconds) to a time.
func scoreTime(score float64) time.Time {
	sec, frac := math.Modf(score)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

// unixSeconds is t in Unix seconds, with its fraction.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// timeScore converts a time to a score in whole Unix seconds.
func timeScore(t time.Time) float64 { return float64(t.Unix()) }
