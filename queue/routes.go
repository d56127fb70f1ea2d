package queue

import (
	"fmt"
	"sync"
	"time"

	"github.com/drover-dev/drover"
)

// routeTTL is how long a producer publishes a queue's wake-ups on the route
// it last read before it reads the route again.
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
// PUBLISH counts only the receivers of one node (docs/decisions.md, "Issue
// 43: a producer keeps the owner's route").
//
// Like Store.known, it holds an entry for every queue the producer sent a
// lone message to; the channels, one per member, are shared.
type routeCache struct {
	on       bool
	clock    drover.Clock
	m        sync.Map // queue name → *route
	channels sync.Map // channel → *string, the one copy the routes share
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
// ask, or nil for none (the cache is off, or the queue had no owner when
// last asked).
func (c *routeCache) arg(queue string) any {
	if !c.on {
		return nil
	}
	if v, ok := c.m.Load(queue); ok {
		if r := v.(*route); c.clock.Now().Before(r.until) {
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
