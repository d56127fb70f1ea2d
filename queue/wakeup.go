package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// Wake-ups reach only a queue's owner (DESIGN.md §10): the owner writes its
// channel into the queue's :owner key when it starts running the queue
// (RouteWakeups), and the enqueue script publishes on the channel that key
// names — one PUBLISH per enqueue call, one delivery (to the owner), on
// standalone Redis and on a Cluster alike. A queue without an owner
// publishes on the unowned channel, which no member listens to. A stale route (the owner moved
// on) costs one delivery to a member that ignores it; the next owner
// overwrites the route when it starts the queue.

// wakeupBuffer is how many wake-ups Wakeups holds for a slow reader.
const wakeupBuffer = 1024

// routeBatch is the most :owner keys written in one pipeline.
const routeBatch = 1000

// Wakeup is one notification on a member's channel (the type lives in the
// root package, so that the worker that consumes wake-ups need not import
// this package).
type Wakeup = drover.Wakeup

// RouteWakeups makes member the receiver of the wake-ups of queues: it
// writes member's channel into each queue's :owner key, in pipelines of
// routeBatch keys. Call it when the member starts running the queues.
func (s Log) RouteWakeups(ctx context.Context, member string, queues ...string) error {
	if member == "" || strings.ContainsFunc(member, func(r rune) bool { return r <= ' ' }) {
		return fmt.Errorf("route wake-ups: member name %q is empty or holds white space", member)
	}
	channel := s.keys.batchChannel(member)
	for i := 0; i < len(queues); i += routeBatch {
		batch := queues[i:min(i+routeBatch, len(queues))]
		pipe := s.rdb.Pipeline()
		for _, q := range batch {
			qk, err := s.queueKeys(q)
			if err != nil {
				return fmt.Errorf("route wake-ups of %q: %w", q, err)
			}
			pipe.Set(ctx, qk.owner, channel, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("route wake-ups of %d queues to %s: %w", len(batch), member, err)
		}
	}
	return nil
}

// Wakeups subscribes to member's channel and returns a channel of wake-ups.
// It returns once the subscription is confirmed. The channel is closed
// after ctx ends, when the goroutine that feeds it has exited.
//
// Wake-ups are hints, not a delivery guarantee: Pub/Sub drops messages while
// the subscription reconnects (go-redis resubscribes by itself), and a reader
// more than 1024 behind loses some. Either is reported by a Wakeup with
// Missed set, delivered before any later one, so the reader can run its
// amortised check instead of polling every queue on a timer.
//
// It subscribes to the three of member's channels: the batch channel its
// queues are routed to (RouteWakeups), whose wake-ups may carry the
// message (Wakeup.Entry) and may come several in one payload
// (parseWakeupBatch), and the entry and plain channels members of older
// versions routed them to, until this member routes them again.
func (s Listener) Wakeups(ctx context.Context, member string) (<-chan Wakeup, error) {
	return s.subscribeWakeups(ctx, s.keys.batchChannel(member), s.keys.entryChannel(member), s.keys.memberChannel(member))
}

// subscribeWakeups is Wakeups of channels.
func (s *core) subscribeWakeups(ctx context.Context, channels ...string) (<-chan Wakeup, error) {
	channel := strings.Join(channels, ", ") // for messages
	sub, err := confirmedSubscription(ctx, func() (*redis.PubSub, error) {
		return confirmed(ctx, s.rdb.Subscribe(ctx, channels...), len(channels))
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe to %s: %w", channel, err)
	}
	out := make(chan Wakeup, wakeupBuffer)
	go func() {
		defer close(out)
		defer sub.Close()
		stop := context.AfterFunc(ctx, func() { sub.Close() })
		defer stop()
		missed := false
		// flush delivers a pending Missed wake-up; false while there is no room.
		flush := func() bool {
			if !missed {
				return true
			}
			select {
			case out <- Wakeup{Missed: true}:
				missed = false
				return true
			default:
				return false
			}
		}
		send := func(w Wakeup) {
			if !flush() {
				return // still behind: the Missed wake-up covers this one
			}
			select {
			case out <- w:
			default:
				missed = true
				s.log.Debug("wake-up dropped: reader is behind", "queue", w.Queue)
			}
		}
		for {
			msg, err := sub.Receive(ctx)
			if ctx.Err() != nil {
				return
			}
			switch m := msg.(type) {
			case *redis.Message:
				if strings.HasPrefix(m.Payload, ":") {
					ws, perr := parseWakeupBatch(m.Payload)
					for _, w := range ws {
						send(w)
					}
					if perr != nil {
						s.log.Warn("ignoring a malformed wake-up", "channel", channel, "payload", clipPayload(m.Payload), "error", perr)
					}
					continue
				}
				w, perr := parseWakeup(m.Payload)
				if perr != nil {
					s.log.Warn("ignoring a malformed wake-up", "channel", channel, "payload", m.Payload, "error", perr)
					continue
				}
				send(w)
			case *redis.Subscription:
				// A confirmation after the first ones means go-redis
				// reconnected and subscribed again: anything published in
				// between is lost.
				if m.Kind == "subscribe" {
					missed = true
					flush()
				}
			case *redis.Pong:
			default:
				if err != nil && !errors.Is(err, redis.ErrClosed) {
					// A broken connection: go-redis reconnects on the next
					// Receive. Avoid spinning while the server is down.
					missed = true
					select {
					case <-time.After(100 * time.Millisecond):
					case <-ctx.Done():
						return
					}
				}
				if errors.Is(err, redis.ErrClosed) {
					return
				}
			}
		}
	}()
	return out, nil
}

// confirmedSubscription runs open (a subscription and the wait for its
// confirmations) and returns what it returns, or ctx's error as soon as ctx
// ends. go-redis reads a new connection's handshake under the client's read
// timeout rather than ctx, and holds the subscription's lock meanwhile, so
// neither ctx nor Close cuts it short: behind a network that accepts a
// connection and never answers (a blackholed link, a proxy whose upstream is
// gone), a caller whose ctx ended would wait out the whole timeout (a leader
// resigning over that outage kept its term for seconds). Here the caller
// returns at once; open finishes in the background and a subscription it
// makes after all is closed.
func confirmedSubscription(ctx context.Context, open func() (*redis.PubSub, error)) (*redis.PubSub, error) {
	type opened struct {
		sub *redis.PubSub
		err error
	}
	done := make(chan opened, 1)
	go func() {
		sub, err := open()
		done <- opened{sub, err}
	}()
	select {
	case o := <-done:
		return o.sub, o.err
	case <-ctx.Done():
		go func() {
			if o := <-done; o.err == nil {
				_ = o.sub.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// confirmed waits for n confirmations of sub's subscriptions and returns
// sub, or closes it and returns the error.
func confirmed(ctx context.Context, sub *redis.PubSub, n int) (*redis.PubSub, error) {
	for range n {
		if _, err := sub.Receive(ctx); err != nil {
			_ = sub.Close()
			return nil, err
		}
	}
	return sub, nil
}

// parseWakeup reads "<queue>", "<queue> <due unix ms>", or a wake-up that
// carries a lone message, "<queue>\n<prev> <pos>\n<id>\n<envelope>"
// (enqueueOneSource: the message at pos, whose previous message in the
// queue is at prev).
func parseWakeup(payload string) (Wakeup, error) {
	if q, rest, ok := strings.Cut(payload, "\n"); ok {
		return parseEntryWakeup(q, rest)
	}
	q, due, hasDue := strings.Cut(payload, " ")
	if q == "" {
		return Wakeup{}, errors.New("empty queue name")
	}
	w := Wakeup{Queue: q}
	if hasDue {
		ms, err := strconv.ParseInt(due, 10, 64)
		if err != nil {
			return Wakeup{}, fmt.Errorf("due time %q: %w", due, err)
		}
		w.Due = time.UnixMilli(ms)
	}
	return w, nil
}

// parseEntryWakeup reads the rest of a wake-up that carries a message:
// "<prev> <pos>\n<id>\n<envelope>".
func parseEntryWakeup(q, rest string) (Wakeup, error) {
	if q == "" {
		return Wakeup{}, errors.New("empty queue name")
	}
	at, rest, ok1 := strings.Cut(rest, "\n")
	id, env, ok2 := strings.Cut(rest, "\n")
	prev, pos, ok3 := strings.Cut(at, " ")
	if !ok1 || !ok2 || !ok3 || id == "" {
		return Wakeup{}, fmt.Errorf("a wake-up with a message wants \"<queue>\\n<prev> <pos>\\n<id>\\n<envelope>\", have %q", clipPayload(q+"\n"+at))
	}
	p, err1 := strconv.ParseInt(prev, 10, 64)
	n, err2 := strconv.ParseInt(pos, 10, 64)
	if err1 != nil || err2 != nil || p <= 0 || n <= p {
		return Wakeup{}, fmt.Errorf("a wake-up with a message wants positions 0 < prev < pos, have %q", at)
	}
	return Wakeup{Queue: q, Prev: drover.Position(p), Entry: &drover.LogEntry{
		Queue: q, Position: drover.Position(n), ID: id, Raw: []byte(env),
	}}, nil
}

// parseWakeupBatch reads the wake-ups of a batch channel's payload
// (enqueueSpreadSource): ":<n>\n" then n entries, each
// "<len(queue)> <len(id)> <len(envelope)> <prev> <pos>\n" followed by the
// queue's name, the id and the envelope; an entry with neither id nor
// envelope is the queue's plain wake-up, and one with no id but an
// envelope carries the queue's first message as "<id>\n<envelope>" after
// prev 0 (enqueue-spread v2: a member before it took such an entry for the
// plain wake-up, which it also is). It returns the entries read before any
// error: each stands alone, as separate payloads would.
func parseWakeupBatch(payload string) ([]Wakeup, error) {
	head, rest, ok := strings.Cut(strings.TrimPrefix(payload, ":"), "\n")
	n, err := strconv.Atoi(head)
	if !ok || err != nil || n < 1 {
		return nil, fmt.Errorf("a batch of wake-ups wants \":<n>\\n\" with n > 0, have %q", clipPayload(payload))
	}
	out := make([]Wakeup, 0, min(n, 1024))
	for i := range n {
		line, body, ok := strings.Cut(rest, "\n")
		var f [5]int64
		fields := strings.Fields(line)
		if ok && len(fields) == len(f) {
			for j := range f {
				if f[j], err = strconv.ParseInt(fields[j], 10, 64); err != nil || f[j] < 0 {
					ok = false
				}
			}
		} else {
			ok = false
		}
		if !ok || f[0] == 0 || f[0]+f[1]+f[2] > int64(len(body)) {
			return out, fmt.Errorf("entry %d of a batch of wake-ups wants \"<len(queue)> <len(id)> <len(envelope)> <prev> <pos>\\n\" and as many bytes, have %q", i+1, clipPayload(line))
		}
		q, id, env := body[:f[0]], body[f[0]:f[0]+f[1]], body[f[0]+f[1]:f[0]+f[1]+f[2]]
		rest = body[f[0]+f[1]+f[2]:]
		if id == "" && env == "" {
			out = append(out, Wakeup{Queue: q})
			continue
		}
		if id == "" {
			// The queue's first message: "<id>\n<envelope>" where the
			// envelope goes, prev 0. A member before enqueue-spread v2
			// reads the entry as the plain wake-up (no id).
			var cut bool
			if id, env, cut = strings.Cut(env, "\n"); !cut || id == "" || f[3] != 0 || f[4] <= 0 {
				return out, fmt.Errorf("entry %d of a batch of wake-ups carries a first message wanting \"<id>\\n<envelope>\" after prev 0, have prev %d and %q", i+1, f[3], clipPayload(body[f[0]:f[0]+f[2]]))
			}
			out = append(out, Wakeup{Queue: q, Entry: &drover.LogEntry{
				Queue: q, Position: drover.Position(f[4]), ID: id, Raw: []byte(env),
			}})
			continue
		}
		if f[3] <= 0 || f[4] <= f[3] {
			return out, fmt.Errorf("entry %d of a batch of wake-ups wants positions 0 < prev < pos, have %d %d", i+1, f[3], f[4])
		}
		out = append(out, Wakeup{Queue: q, Prev: drover.Position(f[3]), Entry: &drover.LogEntry{
			Queue: q, Position: drover.Position(f[4]), ID: id, Raw: []byte(env),
		}})
	}
	if rest != "" {
		return out, fmt.Errorf("a batch of %d wake-ups is followed by %d bytes more", n, len(rest))
	}
	return out, nil
}

// clipPayload shortens a payload for an error message.
func clipPayload(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// AllWakeups subscribes to every member's wake-up channel (a pattern
// subscription) and to the channel of queues no member owns, and returns
// the queue names enqueued to, for observers such as the autoscaler (which
// must see enqueues while no worker runs): it adds one delivery per
// enqueue, whatever the number of members. The channel is closed after ctx ends; names are dropped when the
// reader falls more than 1024 behind.
func (s Listener) AllWakeups(ctx context.Context) (<-chan string, error) {
	patterns := []string{s.keys.memberChannel("*"), s.keys.entryChannel("*"), s.keys.batchChannel("*")}
	sub, err := confirmedSubscription(ctx, func() (*redis.PubSub, error) {
		sub, err := confirmed(ctx, s.rdb.PSubscribe(ctx, patterns...), len(patterns))
		if err != nil {
			return nil, err
		}
		if err := sub.Subscribe(ctx, s.keys.unownedChannel()); err != nil {
			_ = sub.Close()
			return nil, err
		}
		return sub, nil
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe to %s and %s: %w", strings.Join(patterns, ", "), s.keys.unownedChannel(), err)
	}
	out := make(chan string, wakeupBuffer)
	in := sub.Channel()
	go func() {
		defer close(out)
		defer sub.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case msg, ok := <-in:
				if !ok {
					return
				}
				var ws []Wakeup
				if strings.HasPrefix(msg.Payload, ":") {
					ws, _ = parseWakeupBatch(msg.Payload)
				} else if w, err := parseWakeup(msg.Payload); err == nil {
					ws = []Wakeup{w}
				}
				for _, w := range ws {
					select {
					case out <- w.Queue:
					default:
					}
				}
			}
		}
	}()
	return out, nil
}

// WakeupChannel returns the name of member's Pub/Sub channel: enqueues to
// the queues routed to member (Log.RouteWakeups) publish their wake-ups
// there.
func (s Listener) WakeupChannel(member string) string { return s.keys.batchChannel(member) }

// forwardSource passes on wake-ups that reached a member which does not
// own their queues: a producer that keeps the owner's route
// (enqueueOneSource, ARGV[6]) publishes on the route it saw, which names
// the previous owner until the producer reads the route again. For each
// queue it reads :owner and publishes the queue's name where the enqueue
// script would have: on the route, or on the unowned channel when the
// queue has none (a family's key retired since the producer read its
// route: the rebalance leader registers it again at that wake-up). It
// publishes nothing when the route is the member's own (it is about to run
// the queue, or it is the previous owner and the next one has not routed
// the queue yet: that owner reads the queue when it starts it). The queues
// of one call share a slot on a Cluster.
//
//	KEYS: 1 per queue: owner
//	ARGV[1], ARGV[2], ARGV[3] the member's channels (batch, entry, plain)
//	ARGV[4] the unowned channel
//	then 1 per queue: its name
//
// Returns how many wake-ups it passed on.
const forwardSource = `-- drover forward-wakeups v2
local n = 0
for i = 1, #KEYS do
  local ch = redis.call('GET', KEYS[i])
  if ch ~= ARGV[1] and ch ~= ARGV[2] and ch ~= ARGV[3] then
    redis.call('PUBLISH', ch or ARGV[4], ARGV[4 + i])
    n = n + 1
  end
end
return n
`

var forwardScript = redis.NewScript(forwardSource)

// forwardBatch is the most queues of one forward-wakeups call.
const forwardBatch = 256

// ForwardWakeups passes the wake-ups of queues, which reached member
// although it does not run them, on to their owners (forwardSource): one
// script call per slot and forwardBatch queues, in one pipeline: to the
// owner, or on the unowned channel for a queue with none. It returns how
// many it passed on; a queue routed to member is left (docs/decisions.md,
// "Issue 43: a producer keeps the owner's route").
func (s Listener) ForwardWakeups(ctx context.Context, member string, queues ...string) (int, error) {
	// A name no queue can have (anyone may publish on a member's channel)
	// is left out, not the batch.
	queues = slices.DeleteFunc(slices.Clone(queues), func(q string) bool {
		_, err := s.queueKeys(q)
		return err != nil
	})
	calls, err := s.slotCalls(queues, forwardBatch, func(c *scriptCall, q string) {
		if c.args == nil {
			c.args = []any{s.keys.batchChannel(member), s.keys.entryChannel(member), s.keys.memberChannel(member), s.unownedChannel}
		}
		c.keys = append(c.keys, s.keys.queue(q).owner)
		c.args = append(c.args, q)
	})
	if err != nil {
		return 0, fmt.Errorf("forward wake-ups: %w", err)
	}
	s.evalPipelined(ctx, forwardScript, calls)
	n := 0
	for _, c := range calls {
		v, err := c.cmd.Int()
		if err != nil {
			return n, fmt.Errorf("forward wake-ups of %d queues: %w", len(c.queues), err)
		}
		n += v
	}
	return n, nil
}
