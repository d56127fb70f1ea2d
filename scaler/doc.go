// Package scaler answers "how many workers does this backlog need?": it
// measures the lag of a selection of queues and serves it to KEDA through
// KEDA's external scaler contract (gRPC service externalscaler.ExternalScaler:
// IsActive, StreamIsActive, GetMetricSpec, GetMetrics).
//
// A selection is a list of queue names and path.Match globs ("emails",
// "report-*"); a prefix p is the glob p+"*". Its figures are the sum of the
// lags (messages after each queue's committed offset), the number of queues
// with lag, and the largest oldest-message age.
//
// The metric handed to KEDA is the lag clamped to (queues with lag) × target
// lag. KEDA's HPA asks for ceil(metric / target) replicas, so the clamp means
// it never asks for more workers than there are queues with work to own: one
// queue is owned by one worker at a time, and a second worker cannot help a
// single hot queue. The optional second metric, the oldest age, is clamped
// the same way.
//
// StreamIsActive (the external-push trigger) reports a change of activity
// when an enqueue wake-up names a queue of the selection, and in any case
// after at most Config.PollInterval (default 1 s), the backstop for a lost
// wake-up. A selection that matches no queue, unknown metadata keys and
// unparsable values are gRPC errors (NotFound, InvalidArgument), so a typo
// cannot hold a deployment at zero replicas silently.
//
// The package reads the fleet through the small Fleet interface; cmd/drover
// wires ZooKeeper (offsets, configured queues) and Redis (logs) behind it.
package scaler
