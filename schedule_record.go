package drover

import (
	"errors"
	"math"
)

// ScheduleRecord is a schedule entry as stored (docs/scheduler.md): its raw
// definition and metadata and its score in the schedule index
// (drover:schedule). The queue package stores it; the scheduler reads and
// writes it.
type ScheduleRecord struct {
	Name string
	// Definition is the stored JSON, possibly malformed; nil when the entry
	// has none.
	Definition []byte
	// Meta is the stored metadata JSON; nil before the first fire.
	Meta []byte
	// Score is the entry's next due time in Unix seconds (its next slot
	// plus its jitter offset). SchedulePlan (0, or anything below) means
	// "plan me": the leader computes the first slot. ScheduleParked (+Inf)
	// means the entry does not fire: disabled, finished or invalid.
	Score float64
}

// Special schedule scores.
var (
	SchedulePlan   float64 = 0
	ScheduleParked         = math.Inf(1)
)

// ErrScheduleExists: a schedule entry of that name already exists.
var ErrScheduleExists = errors.New("scheduler: schedule already exists")
