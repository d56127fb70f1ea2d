package drover

import "time"

// JobState is where a job is, as a status lookup sees it
// (docs/redis-schema.md, "Job status").
type JobState string

// The states a status lookup answers with.
const (
	// JobDelayed: enqueued for later (at/in), waiting in the delayed set.
	JobDelayed JobState = "delayed"
	// JobPending: in the queue's log after the committed offset, not running.
	JobPending JobState = "pending"
	// JobRunning: an attempt runs on the queue's owner now.
	JobRunning JobState = "running"
	// JobRetrying: an attempt failed; the next one waits in the delayed set.
	JobRetrying JobState = "retrying"
	// JobParked: the head of an ordered queue with on_failure park that used
	// its attempts (or was cancelled with then park): it stays in the log and
	// its queue is paused at it until an operator resolves it (ctl parked).
	JobParked JobState = "parked"
	// JobDead: failed for good; it is in the queue's dead letters.
	JobDead JobState = "dead"
	// JobSucceeded: an attempt succeeded.
	JobSucceeded JobState = "succeeded"
	// JobRevoked: deleted while delayed.
	JobRevoked JobState = "revoked"
	// JobUnknown: never seen, or finished and its record expired (or outcome
	// records are off for the queue).
	JobUnknown JobState = "unknown"
)

// MaxAttemptErrors is how many earlier attempts' failures a retried
// message carries (the envelope's attempt_errors; JobStatus.Attempts).
const MaxAttemptErrors = 10

// AttemptErrorsField is the envelope field that carries them.
const AttemptErrorsField = "attempt_errors"

// JobStatus answers "where is my job?". Which fields are set depends on
// State; AsOf is always set.
type JobStatus struct {
	Queue string   `json:"queue"`
	ID    string   `json:"id"`
	State JobState `json:"state"`
	// AsOf is when the answer was taken (Redis's clock).
	AsOf time.Time `json:"as_of"`
	Task string    `json:"task,omitempty"`
	// Attempt is the attempt running, waiting or last run; 0 is the first.
	Attempt int `json:"attempt"`

	// DueAt: when a delayed job is due, or when a retrying job runs next.
	DueAt *time.Time `json:"due_at,omitempty"`
	// Position and Ahead: a pending job's place in the log and how many
	// messages precede it after the committed offset.
	Position Position `json:"position,omitempty"`
	Ahead    *int64   `json:"ahead,omitempty"`
	// Member, PID and StartedAt: who runs a running job, and since when.
	Member    string     `json:"member,omitempty"`
	PID       int        `json:"pid,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	// Error, ExitCode, StderrTail: a dead job's failure, or a retrying
	// job's last error.
	Error      string `json:"error,omitempty"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
	// FinishedAt: when a job succeeded, died or was revoked.
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Duration of the succeeding attempt, in seconds.
	Duration float64 `json:"duration_seconds,omitempty"`
	// StdoutTail: the last bytes a succeeded task wrote to stdout, when
	// the queue keeps them (Outcomes.StdoutTail).
	StdoutTail string `json:"stdout_tail,omitempty"`
	// Attempts: the failures of the attempts before the last, oldest
	// first (at most MaxAttemptErrors, stderr cut to 256 bytes), for a
	// retrying or dead job; the last one is Error, ExitCode, StderrTail.
	Attempts []Failure `json:"attempts,omitempty"`
	// By: who revoked a revoked job, or who cancelled the running attempt
	// of a job now dead, retrying or parked because of it (Error then
	// starts "cancelled by").
	By string `json:"by,omitempty"`
	// Parked: the pause flag a parked job's queue is paused under (who
	// parked it, when, why, and the head's record), for JobParked only.
	Parked *Pause `json:"parked,omitempty"`
	// Note says what the answer could not tell (details unavailable).
	Note string `json:"note,omitempty"`
}

// Outcome is the record kept for a finished job (succeeded or revoked) for
// its queue's Outcomes.Retention.
type Outcome struct {
	ID         string    `json:"id"`
	State      JobState  `json:"state"`
	Task       string    `json:"task,omitempty"`
	Attempt    int       `json:"attempt"`
	ExitCode   int       `json:"exit_code"`
	FinishedAt time.Time `json:"finished_at"`
	Duration   float64   `json:"duration_seconds,omitempty"`
	Member     string    `json:"member,omitempty"` // who ran it
	By         string    `json:"by,omitempty"`     // who revoked it
	StdoutTail string    `json:"stdout_tail,omitempty"`
}

// Defaults of Outcomes.
const (
	DefaultOutcomeRetention = 24 * time.Hour
	DefaultOutcomeMax       = 10000
	// MaxOutcomeStdoutTail bounds Outcomes.StdoutTail.
	MaxOutcomeStdoutTail = 64 << 10
)

// Outcomes says which records of finished jobs a queue keeps, so that a
// status lookup can answer "succeeded" (or "revoked") after the message has
// left the log.
type Outcomes struct {
	// Retention is how long a record is kept. Nil: 24h; 0: no records.
	Retention *Duration `json:"retention,omitempty"`
	// Max is the most records kept; the oldest go first. Default 10000.
	Max int `json:"max,omitempty"`
	// StdoutTail is how many bytes of a succeeded task's stdout (its
	// result) the record keeps, at most 64 KiB. Default 0: none.
	StdoutTail int `json:"stdout_tail,omitempty"`
}

// Keep returns the retention in effect: 0 means records are off.
func (o Outcomes) Keep() time.Duration {
	if o.Retention == nil {
		return DefaultOutcomeRetention
	}
	return o.Retention.Std()
}

// MaxRecords returns the bound in effect.
func (o Outcomes) MaxRecords() int {
	if o.Max <= 0 {
		return DefaultOutcomeMax
	}
	return o.Max
}
