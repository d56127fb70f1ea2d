package ops

import (
	"context"
	"errors"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/queue"
)

// QueueRegistry is Redis's registry of the queues enqueued to
// (queue.Inspector): one SISMEMBER per question.
type QueueRegistry interface {
	QueueKnown(ctx context.Context, q string) (bool, error)
}

// QueueConfigs finds a queue's configuration: its own or, for a key of a
// family that has not registered it yet, its family's
// (coordinator.Queues.GetOrFamily).
type QueueConfigs interface {
	GetOrFamily(ctx context.Context, q string) (coordinator.QueueEntry, error)
}

// ConfigsFunc is a QueueConfigs made of a function: a caller that
// connects to ZooKeeper only when Redis does not know the queue (ctl), or
// asks through the session of the moment (the console), passes one.
type ConfigsFunc func(ctx context.Context, q string) (coordinator.QueueEntry, error)

// GetOrFamily calls f.
func (f ConfigsFunc) GetOrFamily(ctx context.Context, q string) (coordinator.QueueEntry, error) {
	return f(ctx, q)
}

// KnownQueue is the one answer to "does queue q exist" that every surface
// gives before acting on a queue (the console and its API, `drover ctl`,
// through Queues.Known or directly; the HTTP producer applies it inside its
// enqueue, through ProducerAdmission): q exists when it
// is in Redis's registry of queues enqueued to, or has a configuration in
// ZooKeeper, its own (a corrupt one still counts) or its family's (a
// family's key is known before its first enqueue). Redis is asked first,
// one SISMEMBER, so that a queue used before is known while ZooKeeper is
// away; ZooKeeper is asked only when Redis does not know q (one read, and
// the families' listing for a name not configured). The cost does not
// grow with the number of queues.
//
// It fails with ErrBadInput for an invalid name, with an error wrapping
// drover.ErrQueueNotFound for a queue neither registered nor configured,
// and with Redis's error when Redis failed and ZooKeeper does not know q
// either; a ZooKeeper failure is returned as is.
func KnownQueue(ctx context.Context, reg QueueRegistry, confs QueueConfigs, q string) error {
	if err := drover.ValidateQueueName(q); err != nil {
		return badInput("queue name: %v", err)
	}
	listed, regErr := reg.QueueKnown(ctx, q)
	if regErr == nil && listed {
		return nil
	}
	_, err := configured(ctx, confs, q)
	if regErr != nil && errors.Is(err, drover.ErrQueueNotFound) {
		return regErr
	}
	return err
}

// configured is the ZooKeeper half of KnownQueue's rule, for a queue
// Redis's registry does not list: q's configuration, its own (a corrupt
// one counts: the entry is returned with a nil error) or its family's
// (Version -1); an error wrapping drover.ErrQueueNotFound for neither, or
// ZooKeeper's error.
func configured(ctx context.Context, confs QueueConfigs, q string) (coordinator.QueueEntry, error) {
	e, err := confs.GetOrFamily(ctx, q)
	switch {
	case err == nil, e.Name != "": // configured, under a family, or configured but corrupt
		return e, nil
	case !errors.Is(err, drover.ErrQueueNotFound):
		return e, err
	}
	return e, queueNotFound(q)
}

// ProducerAdmission is KnownQueue's rule as the HTTP producer applies it
// inside its enqueue (queue.Producer.EnqueueAdmitted: one command for a
// queue Redis's registry lists, the enqueue refused with
// queue.ErrNotRegistered otherwise): for a queue the registry does not
// list, the admission to enqueue with, from ZooKeeper as KnownQueue reads
// it. A queue configured on its own (a corrupt configuration counts) is
// registered; a key of a family not registered yet is admitted under its
// family's bound (drover.FamilyConfig.MaxQueues); any other name fails as
// KnownQueue fails (an error wrapping drover.ErrQueueNotFound, or
// ZooKeeper's). So the producer accepts exactly the queues KnownQueue
// knows, and nothing but the family's bound refuses one of them.
func ProducerAdmission(ctx context.Context, confs QueueConfigs, q string) (queue.Admission, error) {
	if err := drover.ValidateQueueName(q); err != nil {
		return queue.Admission{}, badInput("queue name: %v", err)
	}
	e, err := configured(ctx, confs, q)
	switch {
	case err != nil:
		return queue.Admission{}, err
	case e.Version < 0 && e.Config.Family != "" && e.Err == nil: // a family's key not registered yet
		bound := e.MaxQueues
		if bound <= 0 {
			bound = drover.DefaultFamilyMaxQueues
		}
		return queue.Admission{Family: e.Config.Family, MaxQueues: bound}, nil
	}
	return queue.Admission{Register: true}, nil
}

// knownQueue is KnownQueue on the fleet's store and session.
func (o *core) knownQueue(ctx context.Context, q string) error {
	return KnownQueue(ctx, o.store.Inspector(), o.zk.Queues(), q)
}

// queueNames is ListQueueNames on the fleet's store and session.
func (o *core) queueNames(ctx context.Context) ([]string, map[string]bool, error) {
	return ListQueueNames(ctx, o.zk, o.store)
}

// RegistryFunc is a QueueRegistry made of a function (a caller that
// connects to Redis on first use).
type RegistryFunc func(ctx context.Context, q string) (bool, error)

// QueueKnown calls f.
func (f RegistryFunc) QueueKnown(ctx context.Context, q string) (bool, error) { return f(ctx, q) }
