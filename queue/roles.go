package queue

// The roles of a Store (docs/decisions.md, "queue.Store by role (issue
// 32)"). Each is a small value type sharing the Store's client, reached
// through the accessor of its name (store.Log(), store.Producer(), ...),
// and holds what one kind of caller does with the queues; the Store keeps
// what every role shares. A role costs nothing to get: call the accessor
// where it is used, or keep the role.

// Producer adds messages to queues: now, at a time, after a delay, or many
// in one round trip, idempotent by message id (enqueue.go).
type Producer struct{ *core }

// Log is a queue as its owner works it: the worker's store. It reads after
// an offset (one queue or many), promotes due delayed messages, schedules
// retries, dead-letters, trims what is committed (with the outcome
// records), checks many queues for work, reads their heads and backlogs,
// and routes their wake-ups to the owner.
type Log struct{ *core }

// Dead is the dead letters of every queue: kill a message, list, read,
// retry and purge dead letters (dead.go).
type Dead struct{ *core }

// Jobs is what became of messages: one job's status and a queue's outcome
// records (job_status.go, outcome_recent.go).
type Jobs struct{ *core }

// Inspector reads queues without changing them: the queue registry, one
// message, the delayed set, positions, statistics, which queues hold
// messages and when the next delayed one is due (browse.go, positions.go,
// stats.go).
type Inspector struct{ *core }

// Operator is what an operator does to single messages (revoke, run a
// delayed one now, replace a parked envelope) and the audit trail of those
// actions (operator.go, park.go).
type Operator struct{ *core }

// Families is what the rebalance leader's family registrar needs of Redis
// (family.go): the wake-ups of queues no member owns, the scan backstop,
// and the retire of idle queues.
type Families struct{ *core }

// Listener subscribes to wake-ups: one member's, every member's (wakeup.go).
type Listener struct{ *core }

// Producer returns the Store as a producer.
func (s *Store) Producer() Producer { return Producer{s.core} }

// Log returns the Store as a queue owner's log (the worker's store).
func (s *Store) Log() Log { return Log{s.core} }

// Dead returns the Store's dead letters.
func (s *Store) Dead() Dead { return Dead{s.core} }

// Jobs returns the Store's job status and outcome records.
func (s *Store) Jobs() Jobs { return Jobs{s.core} }

// Inspector returns the Store's read-only view of queues.
func (s *Store) Inspector() Inspector { return Inspector{s.core} }

// Operator returns the Store's operator actions and audit trail.
func (s *Store) Operator() Operator { return Operator{s.core} }

// Families returns what the family registrar needs of the Store.
func (s *Store) Families() Families { return Families{s.core} }

// Listener returns the Store's wake-up subscriptions.
func (s *Store) Listener() Listener { return Listener{s.core} }
