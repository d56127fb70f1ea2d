package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

// MaxIDLen is the longest caller-chosen message id accepted, in bytes.
const MaxIDLen = 512

// CheckID refuses a caller-chosen message id (an idempotency key) that
// every producer refuses: over MaxIDLen bytes, or holding a control
// character (NUL, a newline) or a bidirectional control
// (drover.IsBidiControl), which would be shown raw by ctl and the console
// and could make one id read as another (issue 41). "" is valid: it means
// a generated id. The error says what is wrong (the id escaped), for the
// caller to prefix with the field's name.
func CheckID(id string) error {
	if len(id) > MaxIDLen {
		return fmt.Errorf("%d bytes, at most %d", len(id), MaxIDLen)
	}
	for i, r := range id {
		if unicode.IsControl(r) || drover.IsBidiControl(r) {
			return fmt.Errorf("%+q holds the control character %U at byte %d (control and bidirectional characters are refused)", drover.ClipText(id, 64), r, i)
		}
	}
	return nil
}

// maxScriptBatch is the most messages sent in one enqueue script call;
// bigger batches are split into several calls in the same pipeline, so that
// no single script blocks Redis for long.
const maxScriptBatch = 1000

// EnqueueResult says what an enqueue did with one message.
type EnqueueResult struct {
	// ID is the message's id: the caller's, or a generated one.
	ID string
	// Position is the message's place in the log; 0 when the message went
	// to the delayed set or was a duplicate.
	Position drover.Position
	// Duplicate is true when the id was already known (pending, delayed, or
	// inside the dedupe window) and nothing was written.
	Duplicate bool
}

// enqueueRequest is one message on its way to Redis.
type enqueueRequest struct {
	queue string
	id    string
	env   []byte
	due   int64 // unix ms; 0: now
	keyed bool  // caller-chosen id: remember it for the dedupe window

	res EnqueueResult
	err error

	ready chan struct{} // coalescer: result ready, or leadership handed over
	lead  bool
	alone [1]*enqueueRequest // coalescer: the batch of a lone caller
}

// Enqueue adds m to the end of its queue (m.Queue) and returns its id and
// position. m.Task is required. An empty m.ID gets a generated one; a
// caller-chosen id is an idempotency key: enqueueing an id the queue still
// knows — pending, delayed, or within the dedupe window — writes nothing and
// returns Duplicate. m.EnqueuedAt defaults to the Store's clock. m is not
// modified.
//
// Concurrent calls are sent to Redis together in one pipeline. If ctx ends
// before the message was sent, Enqueue returns ctx.Err() and nothing was
// enqueued; once sent, it waits for Redis's reply. A network error leaves the
// outcome unknown; enqueueing the same id again is then safe (it is a no-op
// if the first attempt landed).
func (s Producer) Enqueue(ctx context.Context, m *drover.Message) (EnqueueResult, error) {
	return s.enqueueOne(ctx, m, 0)
}

// EnqueueAt is Enqueue for a message that becomes ready at time at: it goes
// to the queue's delayed set, and the queue's owner promotes it to the log
// when due (PromoteMany). A time not after Redis's clock enqueues at once.
// Revoke deletes it while it waits.
func (s Producer) EnqueueAt(ctx context.Context, m *drover.Message, at time.Time) (EnqueueResult, error) {
	return s.enqueueOne(ctx, m, dueMillis(at))
}

// dueMillis is at as the enqueue script's due time: unix ms, and 1 for a
// time before 1970 (due at once, and distinct from "0 = now").
func dueMillis(at time.Time) int64 {
	if due := at.UnixMilli(); due > 0 {
		return due
	}
	return 1
}

// EnqueueIn is EnqueueAt(ctx, m, now+d), now from the Store's clock.
func (s Producer) EnqueueIn(ctx context.Context, m *drover.Message, d time.Duration) (EnqueueResult, error) {
	return s.EnqueueAt(ctx, m, s.clock.Now().Add(d))
}

func (s *core) enqueueOne(ctx context.Context, m *drover.Message, due int64) (EnqueueResult, error) {
	ctx, span := s.tracer.StartEnqueue(ctx, m) // nil span when tracing is off
	r, err := s.newRequest(ctx, m, due)
	if err != nil {
		span.End(err)
		return EnqueueResult{}, err
	}
	s.batcher.submit(ctx, r)
	span.End(r.err)
	return r.res, r.err
}

// EnqueueBatch adds messages, each as Enqueue would, in one round trip (one
// per Cluster node involved). The messages may belong to different queues;
// within a queue they get positions in slice order. Results are in the order
// of msgs. On error nothing is known about which messages were added;
// enqueueing the batch again with the same ids is safe.
func (s Producer) EnqueueBatch(ctx context.Context, msgs []*drover.Message) ([]EnqueueResult, error) {
	return s.enqueueBatch(ctx, msgs, nil)
}

// EnqueueBatchAt is EnqueueBatch with a due time per message: at[i] zero
// means now, a later time puts msgs[i] in the delayed set (as EnqueueAt).
// Every message is validated before anything is sent. The messages of one
// queue, up to 1000, go in one script call, which writes all of them or
// none.
func (s Producer) EnqueueBatchAt(ctx context.Context, msgs []*drover.Message, at []time.Time) ([]EnqueueResult, error) {
	if len(at) != len(msgs) {
		return nil, fmt.Errorf("enqueue batch: %d due times for %d messages", len(at), len(msgs))
	}
	return s.enqueueBatch(ctx, msgs, at)
}

// newRequests builds the requests of msgs, due at at (nil: every one
// now; a zero time: now).
func (s *core) newRequests(ctx context.Context, msgs []*drover.Message, at []time.Time) ([]*enqueueRequest, error) {
	reqs := make([]*enqueueRequest, len(msgs))
	for i, m := range msgs {
		var due int64 // 0: now
		if at != nil && !at[i].IsZero() {
			due = dueMillis(at[i])
		}
		r, err := s.newRequest(ctx, m, due)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		reqs[i] = r
	}
	return reqs, nil
}

// enqueueBatch is EnqueueBatchAt; a nil at means every message is due now.
func (s *core) enqueueBatch(ctx context.Context, msgs []*drover.Message, at []time.Time) ([]EnqueueResult, error) {
	reqs, err := s.newRequests(ctx, msgs, at)
	if err != nil {
		return nil, err
	}
	s.flushEnqueues(ctx, reqs)
	if err := mergeNotReplicated(reqs); err != nil {
		return nil, err
	}
	out := make([]EnqueueResult, len(reqs))
	for i, r := range reqs {
		out[i] = r.res
	}
	return out, nil
}

// newRequest validates m and encodes its envelope, with the trace context
// of ctx in its headers when tracing is on.
func (s *core) newRequest(ctx context.Context, m *drover.Message, due int64) (*enqueueRequest, error) {
	if m == nil {
		return nil, errors.New("enqueue: nil message")
	}
	if err := drover.ValidateQueueName(m.Queue); err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	if m.Task == "" {
		return nil, fmt.Errorf("enqueue to %s: message has no task", m.Queue)
	}
	if m.Attempt < 0 || m.MaxAttempts < 0 {
		return nil, fmt.Errorf("enqueue to %s: negative attempt or max_attempts", m.Queue)
	}
	if err := CheckID(m.ID); err != nil {
		return nil, fmt.Errorf("enqueue to %s: id %w", m.Queue, err)
	}
	c := *m
	keyed := c.ID != ""
	if !keyed {
		id, err := s.ids.next()
		if err != nil {
			return nil, fmt.Errorf("enqueue to %s: %w", m.Queue, err)
		}
		c.ID = id
	}
	if c.EnqueuedAt.IsZero() {
		c.EnqueuedAt = s.clock.Now().UTC()
	}
	c.Position = 0
	c.Headers = s.tracer.Inject(ctx, c.Headers)
	env, err := encodeEnvelope(&c)
	if err != nil {
		return nil, fmt.Errorf("enqueue %s to %s: encode envelope: %w", c.ID, c.Queue, err)
	}
	return &enqueueRequest{queue: c.Queue, id: c.ID, env: env, due: due, keyed: keyed}, nil
}

// flushEnqueues sends reqs in one pipeline: per queue, the enqueue script
// with up to maxScriptBatch messages per call, plus an SADD to the queue
// registry for queues this Store has not registered yet. In the durable
// mode the pipeline ends with the replicas' confirmation (durable.go), and a
// request whose write is not confirmed gets a NotReplicatedError. It sets
// every request's res or err.
func (s *core) flushEnqueues(ctx context.Context, reqs []*enqueueRequest) {
	if s.durable == nil && len(reqs) == 1 && s.enqueueAlone(ctx, reqs[0]) {
		return
	}
	if s.durable == nil && ((len(reqs) > 1 && s.enqueueMany(ctx, reqs)) || s.enqueueSpread(ctx, reqs)) {
		return
	}
	if s.durable != nil {
		if err := s.durable.ready(ctx, s.rdb); err != nil {
			for _, r := range reqs {
				r.err = err
			}
			return
		}
		if _, ok := s.rdb.(*redis.ClusterClient); ok {
			s.flushEnqueuesPerShard(ctx, reqs)
			return
		}
	}
	s.flushEnqueuesOn(ctx, s.rdb, "", reqs, true, nil)
}

// flushEnqueuesPerShard is flushEnqueues on a Redis Cluster in the durable
// mode (durable.go, shard): the requests go in one pipeline per shard
// master, sent at once, each confirmed by that shard's replicas; the
// queue registry's SADD goes to its own shard, confirmed the same way.
func (s *core) flushEnqueuesPerShard(ctx context.Context, reqs []*enqueueRequest) {
	type group struct {
		rdb     redis.UniversalClient
		barrier string
		reqs    []*enqueueRequest
	}
	var groups []*group
	byNode := map[redis.UniversalClient]*group{}
	for _, r := range reqs {
		node, barrier, err := s.shard(ctx, s.keys.queue(r.queue).log)
		if err != nil {
			r.err = err
			continue
		}
		g := byNode[node]
		if g == nil {
			g = &group{rdb: node, barrier: barrier}
			byNode[node] = g
			groups = append(groups, g)
		}
		g.reqs = append(g.reqs, r)
	}
	var register []string
	for _, r := range reqs {
		if _, ok := s.known.Load(r.queue); !ok && !slices.Contains(register, r.queue) {
			register = append(register, r.queue)
		}
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.flushEnqueuesOn(ctx, g.rdb, g.barrier, g.reqs, false, nil)
			for _, r := range g.reqs {
				if r.err != nil {
					s.reloadOnMoved(ctx, r.err)
					break
				}
			}
		}()
	}
	if len(register) > 0 {
		// A registry entry the failover lost would hide the queue from
		// discovery: confirmed like the messages; on failure the next
		// enqueue to these queues sends it again.
		members := make([]any, len(register))
		for i, q := range register {
			members[i] = q
		}
		err := s.runConfirmedCmd(ctx, s.keys.queues(), func(pipe redis.Pipeliner) redis.Cmder {
			return pipe.SAdd(ctx, s.keys.queues(), members...)
		})
		if err != nil {
			s.reloadOnMoved(ctx, err)
			s.log.Warn("register queues", "key", s.keys.queues(), "queues", register, "error", err)
		} else {
			for _, q := range register {
				s.known.Store(q, struct{}{})
			}
		}
	}
	wg.Wait()
}

// flushEnqueuesOn is flushEnqueues on rdb (the Store's client, or a
// cluster shard's master with the barrier key of one of its slots);
// withRegistry adds the queue registry's SADD to the pipeline. A non-nil
// adm sends every call with enqueueAdmittedSource under that admission
// (admit.go; not on a Redis Cluster) instead of enqueueSource.
func (s *core) flushEnqueuesOn(ctx context.Context, rdb redis.UniversalClient, barrierKey string, reqs []*enqueueRequest, withRegistry bool, adm *Admission) {
	type call struct {
		queue   string
		reqs    []*enqueueRequest
		keys    []string
		args    []any
		cmd     *redis.Cmd
		retried bool // sent again in full after NOSCRIPT
	}
	wake := "" // no wake-up
	if s.wakeups {
		wake = s.unownedChannel
	}
	var (
		calls []*call
		cur   *call            // the call the previous request went to
		open  map[string]*call // every queue's open call, once a batch holds two queues
	)
	for i, r := range reqs {
		c := cur
		if c == nil || c.queue != r.queue {
			if open == nil && c != nil {
				open = map[string]*call{c.queue: c}
			}
			c = open[r.queue] // nil map: nil
		}
		if c == nil || len(c.reqs) == maxScriptBatch {
			qk := s.keys.queue(r.queue)
			n := 1 // room for messages: all that follow while the batch holds one queue
			if open == nil {
				n = min(len(reqs)-i, maxScriptBatch)
			}
			c = &call{
				queue: r.queue,
				reqs:  make([]*enqueueRequest, 0, n),
				keys:  []string{qk.log, qk.msg, qk.seq, qk.delayed, qk.seen, qk.owner},
				args:  append(make([]any, 0, 3+4*n), s.dedupeWindowArg, wake, r.queue),
			}
			if open != nil {
				open[r.queue] = c
			}
			calls = append(calls, c)
		}
		cur = c
		keyed := "0"
		if r.keyed {
			keyed = "1"
		}
		c.reqs = append(c.reqs, r)
		c.args = append(c.args, r.id, r.env, r.due, keyed)
	}

	var register []string
	unknown := func(q string) {
		if _, ok := s.known.Load(q); !ok && withRegistry {
			register = append(register, q)
		}
	}
	if open == nil && len(calls) > 0 { // one queue
		unknown(calls[0].queue)
	}
	for q := range open {
		unknown(q)
	}

	script := enqueueScript
	if adm != nil {
		script = enqueueAdmittedScript
		for _, c := range calls {
			qk := s.keys.queue(c.queue)
			c.keys = append(c.keys, s.keys.queues(), s.keys.familyQueues(), qk.family)
			c.args = append(c.args, adm.mode(), adm.Family, adm.MaxQueues)
		}
	}

	var sadd *redis.IntCmd
	// The replicas' confirmation of each pipeline's writes (durable mode):
	// a call is confirmed by the pipeline it last ran in.
	var confirm, confirmRetry func() error
	if s.durable == nil && len(calls) == 1 && len(register) == 0 {
		// The common case of a lone caller: one command, no pipeline.
		c := calls[0]
		c.cmd = script.Run(ctx, rdb, c.keys, c.args...)
	} else {
		pipe := rdb.Pipeline()
		if len(register) > 0 {
			members := make([]any, len(register))
			for i, q := range register {
				members[i] = q
			}
			sadd = pipe.SAdd(ctx, s.keys.queues(), members...)
		}
		for _, c := range calls {
			c.cmd = script.EvalSha(ctx, pipe, c.keys, c.args...)
		}
		if s.durable != nil {
			confirm = s.durable.confirm(ctx, pipe, barrierKey)
		}
		_, _ = pipe.Exec(ctx) // errors are read per command below

		// Scripts the server did not know (first use, or after a restart)
		// did not run: send them again in full.
		var retry []*call
		for _, c := range calls {
			if isNoScript(c.cmd.Err()) {
				retry = append(retry, c)
			}
		}
		if len(retry) > 0 {
			pipe := rdb.Pipeline()
			for _, c := range retry {
				c.cmd = script.Eval(ctx, pipe, c.keys, c.args...)
				c.retried = true
			}
			if s.durable != nil {
				confirmRetry = s.durable.confirm(ctx, pipe, barrierKey)
			}
			_, _ = pipe.Exec(ctx)
		}
	}
	var unconfirmed, unconfirmedRetry error
	if confirm != nil {
		unconfirmed = confirm()
	}
	if confirmRetry != nil {
		unconfirmedRetry = confirmRetry()
	}

	if sadd != nil && sadd.Err() == nil {
		for _, q := range register {
			s.known.Store(q, struct{}{})
		}
	}
	for _, c := range calls {
		vals, err := c.cmd.Int64Slice()
		if err == nil && len(vals) != len(c.reqs) {
			err = fmt.Errorf("enqueue script returned %d results for %d messages", len(vals), len(c.reqs))
		}
		if err != nil {
			err = fmt.Errorf("enqueue to %s: %w", c.queue, err)
			for _, r := range c.reqs {
				r.err = err
			}
			continue
		}
		why := unconfirmed
		if c.retried {
			why = unconfirmedRetry
		}
		if adm != nil && len(vals) > 0 && vals[0] < -1 {
			err := adm.refusal(c.queue, vals[0]) // nothing was written
			for _, r := range c.reqs {
				r.err = err
			}
			continue
		}
		if why != nil {
			for _, r := range c.reqs {
				r.err = &NotReplicatedError{IDs: []string{r.id}, Reason: why}
			}
			continue
		}
		if adm != nil {
			s.known.Store(c.queue, struct{}{}) // the script listed it
		}
		for i, r := range c.reqs {
			r.res = EnqueueResult{ID: r.id}
			switch v := vals[i]; {
			case v > 0:
				r.res.Position = drover.Position(v)
			case v < 0:
				r.res.Duplicate = true
			}
		}
	}
	// A failed registry SADD does not fail the enqueues (their messages are
	// in); the next enqueue to those queues tries it again.
	if sadd != nil && sadd.Err() != nil {
		s.log.Warn("register queues", "key", s.keys.queues(), "queues", register, "error", sadd.Err())
	}
}

// enqueueAlone sends the common lone call, one message with a generated id
// due now to a queue this Store has registered, with enqueueOneSource: one
// command carrying only what it uses, with the Store's estimate of Redis's
// clock (redisClock: a TIME round trip of its own once every few seconds).
// It reports false, sending nothing, for any other request (a queue this
// Store has not registered goes to enqueueSpread, which registers it in
// the same pipeline).
func (s *core) enqueueAlone(ctx context.Context, r *enqueueRequest) bool {
	if r.keyed || r.due != 0 {
		return false
	}
	if _, ok := s.known.Load(r.queue); !ok {
		return false
	}
	var wake any = "" // no wake-up
	if s.wakeups {
		wake = &s.unownedChannel
	}
	c := &loneCall{now: s.redisNow.now(ctx, s.rdb)}
	args := appendScriptArgs(c.args[:0], enqueueOneSHA, s.keys.queue(r.queue).enqueueOne)
	args = append(args, wake, &r.queue, &r.id, (*envelopeArg)(&r.env), &c.now)
	send := func(rdb processor) (pos int64, err error) {
		switch route := s.routes.arg(ctx, s.rdb, r.queue); {
		case route == nil:
			pos, err = runScript(ctx, rdb, redis.NewIntCmd, args, enqueueOneSource).Result()
		case route == ask:
			var v any
			if v, err = runScript(ctx, rdb, redis.NewCmd, append(args, ask), enqueueOneSource).Result(); err == nil {
				pos, err = s.routes.asked(r.queue, v)
			}
		default:
			if pos, err = runScript(ctx, rdb, redis.NewIntCmd, append(args, route), enqueueOneSource).Result(); err == nil {
				pos = s.routes.position(r.queue, pos)
			}
		}
		return pos, err
	}
	var pos int64
	var err error
	if kept := s.lone.take(s.rdb, s.clock.Now()); kept != nil {
		pos, err = send(kept)
		s.lone.give(s.clock.Now(), err)
		if err != nil && closedUnder(err) {
			pos, err = send(s.rdb) // closed before the call reached Redis (loneConn)
		}
	} else {
		pos, err = send(s.rdb)
	}
	switch {
	case err != nil:
		r.err = fmt.Errorf("enqueue to %s: %w", r.queue, err)
	case pos > 0:
		r.res = EnqueueResult{ID: r.id, Position: drover.Position(pos)}
	default:
		r.res = EnqueueResult{ID: r.id, Duplicate: true}
	}
	return true
}

// loneCall is enqueueAlone's command in one allocation: the EVALSHA's
// arguments (KEYS: 4, ARGV: 6) and the clock estimate one of them points
// to (script_call.go).
type loneCall struct {
	args [3 + 4 + 6]any
	now  int64
}

// enqueueMany sends, with enqueueManySource, a batch of up to
// maxScriptBatch messages to one queue this Store has registered, all with
// generated ids and due now: what the coalescer gathers from concurrent
// Enqueue calls. It reports false, sending nothing, for any other batch.
func (s *core) enqueueMany(ctx context.Context, reqs []*enqueueRequest) bool {
	if len(reqs) > maxScriptBatch {
		return false
	}
	q := reqs[0].queue
	for _, r := range reqs {
		if r.keyed || r.due != 0 || r.queue != q {
			return false
		}
	}
	if _, ok := s.known.Load(q); !ok {
		return false
	}
	var wake any = "" // no wake-up
	if s.wakeups {
		wake = &s.unownedChannel
	}
	keys := s.keys.queue(q).enqueueOne
	args := appendScriptArgs(make([]any, 0, 3+len(keys)+3+2*len(reqs)), enqueueManySHA, keys)
	args = append(args, wake, &reqs[0].queue, s.redisNow.now(ctx, s.rdb))
	for _, r := range reqs {
		args = append(args, &r.id, (*envelopeArg)(&r.env))
	}
	vals, err := runScript(ctx, s.rdb, redis.NewIntSliceCmd, args, enqueueManySource).Result()
	if err == nil && len(vals) != len(reqs) {
		err = fmt.Errorf("enqueue script returned %d results for %d messages", len(vals), len(reqs))
	}
	for i, r := range reqs {
		switch {
		case err != nil:
			r.err = fmt.Errorf("enqueue to %s: %w", q, err)
		case vals[i] > 0:
			r.res = EnqueueResult{ID: r.id, Position: drover.Position(vals[i])}
		default:
			r.res = EnqueueResult{ID: r.id, Duplicate: true}
		}
	}
	return true
}

// enqueueSpread sends a batch over one queue or several, every message with
// a generated id and due now (an EnqueueBatch of a fleet's keys, a message
// or a few each, or a new key's lone message), as one pipeline, with the
// queue registry's SADD for the queues this Store has not registered (as
// flushEnqueuesOn does: a new key's first message takes the lone scripts'
// path, and its wake-up carries it; docs/decisions.md, "Issue 43: a new
// key's first message comes with its wake-up"), all with one estimate of
// Redis's clock: the queues that get one message go together in
// enqueue-spread calls (spreadBatch queues a call), so that a call, not a
// message, pays the script call and a wake-up goes to each owner once
// (docs/decisions.md, "Issue 43: a fleet's batch in one call, its wake-ups
// one per owner"); a queue that gets several goes in an enqueue-many call
// of its own (its messages in their order, maxScriptBatch a call). On a Cluster, where a script touches one slot,
// a lone message goes in an enqueue-one call of its own. The general
// script would run TIME and an MGET in each call: two commands a queue the
// estimate and SET … GET make unneeded (docs/decisions.md, "Issue 43: a
// fleet's batch goes through the lone scripts"). It reports false,
// sending nothing, for any other batch.
func (s *core) enqueueSpread(ctx context.Context, reqs []*enqueueRequest) bool {
	var (
		register []string            // the queues this Store has not registered
		listed   map[string]struct{} // register's, once it has one
	)
	for _, r := range reqs {
		if r.keyed || r.due != 0 {
			return false
		}
		if _, ok := s.known.Load(r.queue); ok {
			continue
		}
		if _, ok := listed[r.queue]; !ok {
			if listed == nil {
				listed = map[string]struct{}{}
			}
			listed[r.queue] = struct{}{}
			register = append(register, r.queue)
		}
	}
	type call struct {
		reqs   []*enqueueRequest
		args   []any
		src    string
		one    *redis.IntCmd      // a lone message's call
		asked  *redis.Cmd         // a lone message's call that asks for the route
		route  any                // that call's ARGV[6] (routeCache.arg)
		many   *redis.IntSliceCmd // the call of several messages to one queue
		spread *redis.SliceCmd    // the call of one message to each of several queues
		routes []any              // the spread call's routes, a queue each
	}
	var (
		calls []*call
		open  = map[string]*call{}
	)
	lone := map[string]*call{} // the queues with one message: their call
	for _, r := range reqs {
		c := open[r.queue]
		if c == nil || len(c.reqs) == maxScriptBatch {
			c = &call{}
			open[r.queue] = c
			calls = append(calls, c)
		}
		c.reqs = append(c.reqs, r)
		if _, again := lone[r.queue]; again {
			lone[r.queue] = nil
		} else {
			lone[r.queue] = c
		}
	}
	if !s.cluster() {
		// The queues with one message each go together.
		kept := calls[:0]
		var spread *call
		for _, c := range calls {
			if len(c.reqs) > 1 || lone[c.reqs[0].queue] != c {
				// Several messages to the queue: their call (or calls,
				// in their order) keeps them in order.
				kept = append(kept, c)
				continue
			}
			if spread == nil || len(spread.reqs) == spreadBatch {
				spread = &call{src: enqueueSpreadSource}
				kept = append(kept, spread)
			}
			spread.reqs = append(spread.reqs, c.reqs[0])
		}
		calls = kept
	}
	var wake any = "" // no wake-up
	if s.wakeups {
		wake = &s.unownedChannel
	}
	var now any = s.redisNow.now(ctx, s.rdb) // boxed once for every call
	send := func(pipe redis.Pipeliner, c *call) {
		var cmd redis.Cmder
		switch {
		case c.src == enqueueSpreadSource:
			c.spread = redis.NewSliceCmd(ctx, c.args...)
			cmd = c.spread
		case len(c.reqs) == 1 && c.route == ask:
			c.asked = redis.NewCmd(ctx, c.args...)
			cmd = c.asked
		case len(c.reqs) == 1:
			c.one = redis.NewIntCmd(ctx, c.args...)
			cmd = c.one
		default:
			c.many = redis.NewIntSliceCmd(ctx, c.args...)
			cmd = c.many
		}
		cmd.SetFirstKeyPos(3)
		_ = pipe.Process(ctx, cmd)
	}
	pipe := s.rdb.Pipeline()
	var sadd *redis.IntCmd
	if len(register) > 0 {
		members := make([]any, len(register))
		for i, q := range register {
			members[i] = q
		}
		sadd = pipe.SAdd(ctx, s.keys.queues(), members...)
	}
	for _, c := range calls {
		switch {
		case c.src == enqueueSpreadSource:
			c.args = append(make([]any, 0, 3+8*len(c.reqs)+2), "evalsha", enqueueSpreadSHA, 4*len(c.reqs))
			for _, r := range c.reqs {
				keys := s.keys.queue(r.queue).enqueueOne
				for i := range keys {
					c.args = append(c.args, &keys[i])
				}
			}
			c.args = append(c.args, wake, now)
			c.routes = make([]any, len(c.reqs))
			for i, r := range c.reqs {
				c.routes[i] = s.routes.arg(ctx, s.rdb, r.queue)
				route := c.routes[i]
				if route == nil {
					route = noRoute
				}
				c.args = append(c.args, &r.queue, &r.id, (*envelopeArg)(&r.env), route)
			}
		case len(c.reqs) == 1:
			r := c.reqs[0]
			keys := s.keys.queue(r.queue).enqueueOne
			c.args = appendScriptArgs(make([]any, 0, 3+len(keys)+6), enqueueOneSHA, keys)
			c.args = append(c.args, wake, &r.queue, &r.id, (*envelopeArg)(&r.env), now)
			if c.route = s.routes.arg(ctx, s.rdb, r.queue); c.route != nil {
				c.args = append(c.args, c.route)
			}
			c.src = enqueueOneSource
		default:
			keys := s.keys.queue(c.reqs[0].queue).enqueueOne
			c.args = appendScriptArgs(make([]any, 0, 3+len(keys)+3+2*len(c.reqs)), enqueueManySHA, keys)
			c.args = append(c.args, wake, &c.reqs[0].queue, now)
			for _, r := range c.reqs {
				c.args = append(c.args, &r.id, (*envelopeArg)(&r.env))
			}
			c.src = enqueueManySource
		}
		send(pipe, c)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command below
	// Scripts the server did not know (first use, or after a restart or a
	// SCRIPT FLUSH) did not run: send those calls again in full.
	var retry redis.Pipeliner
	for _, c := range calls {
		var err error
		switch {
		case c.spread != nil:
			err = c.spread.Err()
		case c.asked != nil:
			err = c.asked.Err()
		case c.one != nil:
			err = c.one.Err()
		default:
			err = c.many.Err()
		}
		if isNoScript(err) {
			if retry == nil {
				retry = s.rdb.Pipeline()
			}
			c.args[0], c.args[1] = "eval", c.src
			send(retry, c)
		}
	}
	if retry != nil {
		_, _ = retry.Exec(ctx)
	}
	switch {
	case sadd == nil:
	case sadd.Err() == nil:
		for _, q := range register {
			s.known.Store(q, struct{}{})
		}
	default:
		// As in flushEnqueuesOn: the messages are in; the next enqueue to
		// these queues registers them again.
		s.log.Warn("register queues", "key", s.keys.queues(), "queues", register, "error", sadd.Err())
	}
	for _, c := range calls {
		var (
			vals []int64
			err  error
		)
		switch {
		case c.spread != nil:
			var v []any
			if v, err = c.spread.Result(); err == nil {
				vals, err = s.spreadAnswer(c.reqs, c.routes, v)
			}
		case c.asked != nil:
			var v any
			var pos int64
			if v, err = c.asked.Result(); err == nil {
				pos, err = s.routes.asked(c.reqs[0].queue, v)
			}
			vals = []int64{pos}
		case c.one != nil:
			var v int64
			if v, err = c.one.Result(); err == nil && c.route != nil {
				v = s.routes.position(c.reqs[0].queue, v)
			}
			vals = []int64{v}
		default:
			vals, err = c.many.Result()
			if err == nil && len(vals) != len(c.reqs) {
				err = fmt.Errorf("enqueue script returned %d results for %d messages", len(vals), len(c.reqs))
			}
		}
		for i, r := range c.reqs {
			switch {
			case err != nil:
				r.err = fmt.Errorf("enqueue to %s: %w", r.queue, err)
			case vals[i] > 0:
				r.res = EnqueueResult{ID: r.id, Position: drover.Position(vals[i])}
			default:
				r.res = EnqueueResult{ID: r.id, Duplicate: true}
			}
		}
	}
	return true
}

// spreadBatch is the most queues of one enqueue-spread call: a call runs
// about five commands a queue, so that one call holds Redis for a
// millisecond or two at most.
const spreadBatch = 256

// noRoute is enqueue-spread's route of a queue whose producer sends none
// (routeCache.arg answered nil): the script reads :owner and does not
// answer it.
var noRoute any = "-"

// spreadAnswer reads an enqueue-spread reply, {positions, routes}, for
// reqs sent with routes (routeCache.arg's answers): the positions, each
// read as enqueueOneSource's answer to that route would be, the routes
// asked for noted.
func (s *core) spreadAnswer(reqs []*enqueueRequest, routes []any, v []any) ([]int64, error) {
	if len(v) != 2 {
		return nil, fmt.Errorf("enqueue-spread answered %d values, want 2", len(v))
	}
	pos, ok1 := v[0].([]any)
	chans, ok2 := v[1].([]any)
	if !ok1 || !ok2 || len(pos) != len(reqs) || len(chans) != len(reqs) {
		return nil, fmt.Errorf("enqueue-spread answered %v for %d messages", v, len(reqs))
	}
	vals := make([]int64, len(reqs))
	for i, r := range reqs {
		p, ok := pos[i].(int64)
		if !ok {
			return nil, fmt.Errorf("enqueue-spread answered %v for %s", pos[i], r.queue)
		}
		switch routes[i] {
		case nil:
		case ask:
			if p > 0 {
				ch, _ := chans[i].(string)
				s.routes.keep(r.queue, ch)
			}
		default:
			p = s.routes.position(r.queue, p)
		}
		vals[i] = p
	}
	return vals, nil
}

// formatInt formats a position or time for a Redis argument.
func formatInt(v int64) string { return strconv.FormatInt(v, 10) }
