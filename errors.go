package drover

import "errors"

// Sentinel errors. Adapters translate driver errors into these at the
// boundary; callers branch with errors.Is.
var (
	// ErrNotOwner: the caller does not own the queue (another member holds
	// the owner node, or the claim was never made).
	ErrNotOwner = errors.New("drover: not the owner of the queue")
	// ErrFenced: a write was refused because a newer owner or leader has
	// fenced the caller (the offset node's or epoch's version moved on).
	// The caller must stop acting on the queue and never retry the write.
	ErrFenced = errors.New("drover: fenced by a newer owner")
	// ErrSessionLost: the ZooKeeper session this state belonged to has
	// expired or was replaced by a new session id.
	ErrSessionLost = errors.New("drover: coordination session lost")
	// ErrNotLeader: the caller is not (or no longer) the elected leader.
	ErrNotLeader = errors.New("drover: not leader")
	// ErrQueueNotFound: the named queue has no configuration.
	ErrQueueNotFound = errors.New("drover: queue not found")
	// ErrInvalidQueueName: a queue name is empty, too long, or holds '/',
	// ':', braces, white space or control characters.
	ErrInvalidQueueName = errors.New("drover: invalid queue name")
	// ErrNotFound: a message, schedule or node does not exist.
	ErrNotFound = errors.New("drover: not found")
	// ErrPoison: an envelope could not be decoded.
	ErrPoison = errors.New("drover: undecodable envelope")
	// ErrOutcomeUnknown: a write was sent but whether it took effect, or
	// will survive a failover, is not known (its reply was lost, or the
	// replicas did not confirm it in time). Sending it again is safe where
	// the write is idempotent (an enqueue with the same ids).
	ErrOutcomeUnknown = errors.New("drover: outcome unknown")
	// ErrInvalidConfig: a configuration value failed validation.
	ErrInvalidConfig = errors.New("drover: invalid configuration")
)
