package queue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// routeTTL is how long a producer publishes a queue's wake-ups on the route
// it last read before it reads the route again, and how often it asks the
// server whether anyone subscribes to a pattern.
const routeTTL = 30 * time.Second

// routeCache is what a producer knows of its queues' owners: the route
// (the owner's channel, the queue's :owner key) a lone enqueue read, which
// the next ones publish on without reading :owner (enqueueOneSource,
// ARGV[6]): one command less a message. A route is kept routeTTL; it is
// dropped at once when a wake-up sent on it reached nobody (the member is
// gone: the script then read :owner and woke the owner). A route that names
// a live member which no longer owns the queue still wakes the owner: that
// member passes the wake-up on (Listener.ForwardWakeups), until the route
// is read again. A queue found without an owner is not asked again for
// routeTTL: its enqueues read :owner as before. Off on a Cluster, where
// PUBLISH counts only the receivers of one node, and while the server has
// pattern subscribers (PUBSUB NUMPAT, asked every routeTTL): PUBLISH counts
// those too, and the autoscaler's pattern (Listener.AllWakeups) matches
// every member's channel, a gone member's included (docs/decisions.md,
// "Issue 43: a producer keeps the owner's route").
//
// Like Store.known, it holds the queues the producer sent a lone message to
// lately (recent: the last routeTTL or two); the channels, one per member,
// are shared.
type routeCache struct {
	on       bool
	clock    drover.Clock
	m        *recent[*route] // queue name → route; a queue not sent to for a routeTTL or two is forgotten
	channels sync.Map        // channel → *string, the one copy the routes share

	// What the last PUBSUB NUMPAT said (patterns: some, or it failed),
	// when (unix ns; 0: never asked), and whether a call is asking now.
	patterns     atomic.Bool
	patternsAt   atomic.Int64
	patternsBusy atomic.Bool
}

// route is one queue's route ("": none found) and until when it is used.
type route struct {
	channel *string
	until   time.Time
}

// none is the route of a queue found without an owner.
var none = new(string)

// ask is the ARGV[6] that asks the script for the route.
var ask any = ""

// arg returns enqueue-one's ARGV[6] for queue: the route to publish on,
// ask, or nil for none (the cache is off, the server has pattern
// subscribers, or the queue had no owner when last asked).
func (c *routeCache) arg(ctx context.Context, rdb numpatReader, queue string) any {
	if !c.on {
		return nil
	}
	now := c.clock.Now()
	if c.patternSubscribers(ctx, rdb, now) {
		return nil
	}
	if r, ok := c.m.Load(queue); ok {
		if now.Before(r.until) {
			if r.channel == none {
				return nil
			}
			return r.channel
		}
	}
	return ask
}

// keep notes the route the script answered for queue ("": none).
func (c *routeCache) keep(queue, channel string) {
	ch := none
	if channel != "" {
		v, _ := c.channels.LoadOrStore(channel, &channel)
		ch = v.(*string)
	}
	c.m.Store(queue, &route{channel: ch, until: c.clock.Now().Add(routeTTL)})
}

// position reads an enqueue-one answer to a call that sent a route or
// none: the position, or -1 for a known id. A negated position says the
// route sent reached nobody: it is dropped.
func (c *routeCache) position(queue string, v int64) int64 {
	if v < -1 {
		c.m.Delete(queue)
		return -v
	}
	return v
}

// asked reads an enqueue-one answer to a call that asked for the route: a
// position (the queue has no owner), or {position, route}.
func (c *routeCache) asked(queue string, v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		if v > 0 {
			c.keep(queue, "")
		}
		return v, nil
	case []any:
		if len(v) == 2 {
			pos, ok := v[0].(int64)
			ch, ok2 := v[1].(string)
			if ok && ok2 && pos > 0 {
				c.keep(queue, ch)
				return pos, nil
			}
		}
	}
	return 0, fmt.Errorf("enqueue-one answered %v", v)
}

// numpatReader is what patternSubscribers needs of a client.
type numpatReader interface {
	PubSubNumPat(ctx context.Context) *redis.IntCmd
}

// patternSubscribers reports whether the server had pattern subscribers
// when last asked, asking again (one round trip of the calling enqueue)
// when that was routeTTL ago. While another call asks, the last answer
// stands (before any answer: yes, so no route is sent).
func (c *routeCache) patternSubscribers(ctx context.Context, rdb numpatReader, now time.Time) bool {
	if at := c.patternsAt.Load(); at != 0 && now.Sub(time.Unix(0, at)) < routeTTL {
		return c.patterns.Load()
	}
	if !c.patternsBusy.CompareAndSwap(false, true) {
		return c.patternsAt.Load() == 0 || c.patterns.Load()
	}
	defer c.patternsBusy.Store(false)
	n, err := rdb.PubSubNumPat(ctx).Result()
	c.patterns.Store(err != nil || n > 0)
	c.patternsAt.Store(now.UnixNano())
	return c.patterns.Load()
}
