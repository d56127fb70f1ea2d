package worker

import (
	"context"
	"time"

	"github.com/drover-dev/drover"
)

// maxPromoteBatch is the most promotions one round trip of the promoter
// carries.
const maxPromoteBatch = 1024

// promoter gathers the queue loops' promotions into shared round trips (a
// coalescer of PromoteMany calls, coalesce.go), as the reader does their
// reads. A running queue promotes every PromoteInterval; with thousands
// running at once, as when a member falls behind, a round trip and a
// connection of the Redis client's pool each queued hundreds of them for
// the pool, and the member's own health ping behind them (docs/decisions.md,
// "Issue 43: promotions in shared round trips").
type promoter struct {
	coalescer[drover.PromoteRequest, drover.PromoteResult]
	store Store
}

func newPromoter(store Store) *promoter {
	p := &promoter{store: store}
	p.coalescer = coalescer[drover.PromoteRequest, drover.PromoteResult]{send: p.send, limit: maxPromoteBatch, inFlight: 1}
	return p
}

// promote returns what PromoteMany returns for the one request, sent with
// the other loops' promotions. A promotion whose ctx ends before it is
// sent is not sent.
func (p *promoter) promote(ctx context.Context, queue string, now time.Time, limit int) (int, time.Time, error) {
	res, err := p.do(ctx, drover.PromoteRequest{Queue: queue, Now: now, Limit: limit})
	if err != nil {
		return 0, time.Time{}, err
	}
	return res.Moved, res.Next, res.Err
}

// send promotes the live calls in one PromoteMany.
func (p *promoter) send(live []*coalesced[drover.PromoteRequest, drover.PromoteResult]) {
	reqs := make([]drover.PromoteRequest, len(live))
	for i, c := range live {
		reqs[i] = c.req
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	res := p.store.PromoteMany(ctx, reqs)
	cancel()
	for i, c := range live {
		if i < len(res) {
			c.res = res[i]
		} else {
			c.res.Err = errShortPromoteMany
		}
	}
}
