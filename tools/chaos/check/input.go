package check

import "time"

// Execution is one finished run of a task, as the task process logged it.
type Execution struct {
	Queue     string
	ID        string
	Attempt   int
	Position  int64 // the message's position in its queue (DROVER_POSITION)
	WorkerPID int   // the worker process that ran it (the task's parent)
	PID       int   // the task process
	Start     time.Time
	End       time.Time
	// Killed: the task was sent SIGTERM and logged the kill (End) before
	// dying of it; the run did not finish and is not an execution the
	// other checks count.
	Killed bool
}

// Enqueued is one message whose enqueue Redis confirmed.
type Enqueued struct {
	Queue    string
	ID       string
	Position int64 // 0 when the confirming enqueue was a retry that found it present
}

// OffsetSample is one read of /offsets/<queue>.
type OffsetSample struct {
	At       time.Time `json:"at"`
	Queue    string    `json:"queue"`
	Version  int32     `json:"version"`
	Position int64     `json:"position"`
	Member   string    `json:"member,omitempty"`
}

// Schedule is a schedule entry's progress read after the schedulers were
// stopped: every slot from its first fired one up to Next (exclusive) must
// have fired.
type Schedule struct {
	Name  string        `json:"name"`
	Queue string        `json:"queue"`
	Every time.Duration `json:"every"`
	// Next is the entry's next pending slot; zero when the entry was never
	// planned.
	Next time.Time `json:"next"`
}

// DeadLetter is a message found in a queue's dead letters after the run.
type DeadLetter struct {
	Queue  string `json:"queue"`
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Policy holds the run's parameters the checks depend on.
type Policy struct {
	// SessionTimeout is the workers' ZooKeeper session timeout.
	SessionTimeout time.Duration `json:"session_timeout"`
	// CommitWindow bounds how long a finished task may wait for its commit:
	// one finished at least this long before a fault is committed.
	CommitWindow time.Duration `json:"commit_window"`
}

// Input is a chaos run's record.
type Input struct {
	Executions []Execution
	Enqueued   []Enqueued
	// Ordered holds the names of the ordered queues.
	Ordered   map[string]bool
	Faults    []Fault
	Offsets   []OffsetSample
	Schedules []Schedule
	// FinalOffsets are the queues' committed positions after the drain.
	FinalOffsets map[string]int64
	// DeadLetters are the dead letters found after the run (the task never
	// fails, so every one is a finding; a lost message found here is
	// reported with the reason).
	DeadLetters []DeadLetter
	// Pending are the messages still in their queue's log after the
	// committed offset when the run ended: a message that never ran but is
	// pending was not lost, the drain ended too early.
	Pending []Enqueued
	// LeaseFires are the firings of the workers' task leases (from the
	// supervisors' notices in the worker logs).
	LeaseFires []LeaseFire
	Policy     Policy
	// Parks are the parks of ordered queues at a failed head (parked.go).
	Parks []Park
	// Retired are the keys of a retiring family found retired after the
	// drain (churn.go): no final offset is expected of them.
	Retired map[string]bool
	// KeyChurn summarises the family's keys (nil when the run had none).
	KeyChurn *ChurnSummary
}

// LeaseFire is one firing of a worker's task lease.
type LeaseFire struct {
	WorkerPID int       `json:"worker_pid"`
	At        time.Time `json:"at"`
	Groups    int       `json:"groups"` // process groups it sent SIGTERM
}
