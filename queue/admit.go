package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

// ErrNotRegistered: an enqueue under the zero Admission found its queue
// missing from the queue registry (drover:queues) and wrote nothing. The
// caller decides by its own rule (ops.KnownQueue: the queue's configuration
// or its family's) whether to enqueue again with a wider Admission.
var ErrNotRegistered = errors.New("queue not in the queue registry")

// Admission is what an enqueue may do to a queue the queue registry does
// not list (the HTTP producer's rule; docs/decisions.md, "Issue 42: one
// round trip per HTTP enqueue"). A queue the registry lists is enqueued to
// whatever the Admission. The zero Admission refuses any other queue
// (ErrNotRegistered).
type Admission struct {
	// Register enqueues to a queue not listed yet and lists it: a queue
	// configured on its own.
	Register bool
	// Family, when set, admits a key of this family not listed yet while
	// the family holds fewer than MaxQueues queues admitted this way, and
	// counts it until it retires (Families.Retire gives the room back);
	// when it holds MaxQueues, the enqueue writes nothing and fails with
	// a *drover.FamilyFullError. MaxQueues must then be > 0.
	Family    string
	MaxQueues int
}

// mode is the enqueue-admitted script's mode argument.
func (a *Admission) mode() string {
	switch {
	case a.Family != "":
		return "family"
	case a.Register:
		return "register"
	}
	return "known"
}

// refusal is the error of the script's refusal code (-2: not registered,
// -3: the family is full) for queue q.
func (a *Admission) refusal(q string, code int64) error {
	switch code {
	case -2:
		return fmt.Errorf("enqueue to %s: %w", q, ErrNotRegistered)
	case -3:
		return &drover.FamilyFullError{Queue: q, Family: a.Family, MaxQueues: a.MaxQueues}
	}
	return fmt.Errorf("enqueue to %s: the admission script answered %d", q, code)
}

// EnqueueAdmitted is EnqueueBatchAt for messages of one queue, under adm:
// for a queue the registry lists it costs one command (the enqueue script
// with the registry's check inside it, enqueueAdmittedSource); for any
// other queue it writes nothing and fails with an error wrapping
// ErrNotRegistered (the zero Admission) or drover.ErrFamilyFull (a family
// at its bound), or enqueues and lists the queue. at is nil (every message
// due now) or holds a due time per message, as in EnqueueBatchAt. The
// durable mode confirms the write as for EnqueueBatchAt.
//
// On a Redis Cluster the registry and the families' counts are in other
// slots than the queue, so no script may check them beside its writes:
// there the check is its own command before the enqueue (two round trips
// for a listed queue), and a family's bound is not enforced.
func (s Producer) EnqueueAdmitted(ctx context.Context, msgs []*drover.Message, at []time.Time, adm Admission) ([]EnqueueResult, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	if at != nil && len(at) != len(msgs) {
		return nil, fmt.Errorf("enqueue admitted: %d due times for %d messages", len(at), len(msgs))
	}
	if adm.Family != "" && adm.MaxQueues <= 0 {
		return nil, fmt.Errorf("enqueue admitted: family %s: a bound > 0 is required, have %d", adm.Family, adm.MaxQueues)
	}
	q := msgs[0].Queue
	for i, m := range msgs {
		if m == nil || m.Queue != q {
			return nil, fmt.Errorf("enqueue admitted: message %d: every message must be to queue %s", i, q)
		}
	}
	if s.cluster() {
		return s.enqueueAdmittedOnCluster(ctx, msgs, at, adm)
	}
	reqs, err := s.newRequests(ctx, msgs, at)
	if err != nil {
		return nil, err
	}
	if s.durable != nil {
		if err := s.durable.ready(ctx, s.rdb); err != nil {
			return nil, err
		}
	}
	s.flushEnqueuesOn(ctx, s.rdb, "", reqs, false, &adm)
	if err := mergeNotReplicated(reqs); err != nil {
		return nil, err
	}
	out := make([]EnqueueResult, len(reqs))
	for i, r := range reqs {
		out[i] = r.res
	}
	return out, nil
}

// enqueueAdmittedOnCluster is EnqueueAdmitted on a Redis Cluster: the
// registry's check, then EnqueueBatchAt (which lists the queue).
func (s Producer) enqueueAdmittedOnCluster(ctx context.Context, msgs []*drover.Message, at []time.Time, adm Admission) ([]EnqueueResult, error) {
	q := msgs[0].Queue
	if adm.Family == "" && !adm.Register {
		known, err := Inspector{s.core}.QueueKnown(ctx, q)
		if err != nil {
			return nil, err
		}
		if !known {
			return nil, fmt.Errorf("enqueue to %s: %w", q, ErrNotRegistered)
		}
	}
	if at == nil {
		return s.EnqueueBatch(ctx, msgs)
	}
	return s.EnqueueBatchAt(ctx, msgs, at)
}

// FamilyQueues reports how many queues the admission of HTTP producers
// brought into family and no retire has removed since (what its
// max_queues is checked against; 0 on a Redis Cluster). One HGET.
func (s Families) FamilyQueues(ctx context.Context, family string) (int, error) {
	if s.cluster() {
		return 0, nil
	}
	v, err := s.rdb.HGet(ctx, s.keys.familyQueues(), family).Result()
	if err != nil {
		if errors.Is(err, redis.Nil) {
			return 0, nil
		}
		return 0, fmt.Errorf("read the queue count of family %s: %w", family, err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("read the queue count of family %s: %q is not a number", family, v)
	}
	return n, nil
}
