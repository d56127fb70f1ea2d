package fleet

import "context"

// Activity tells the rebalance leader which queues are busy, so that the
// moves that restore balance after removals take queues with nothing
// running and no backlog (balance.go). *queue.Inspector implements it.
type Activity interface {
	// NonEmpty reports, for each of queues (in order), whether its log
	// holds a message: pending, or running (a running message stays in the
	// log until it is committed and trimmed). A queue whose log is empty
	// has nothing running and no backlog. One round trip for the batch; an
	// error means nothing is known.
	NonEmpty(ctx context.Context, queues []string) ([]bool, error)
}
