package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/tracing"
	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"
)

// Defaults for Config fields left zero.
const (
	DefaultDedupeWindow = 24 * time.Hour
	DefaultMaxCoalesce  = 512
)

// Config configures a Store. The zero value of every field but Client means
// the documented default.
type Config struct {
	// Client is the Redis client: standalone, Sentinel or Cluster (see
	// NewClient). Required. The Store does not close it.
	Client redis.UniversalClient
	// Prefix starts every key name; default "drover". It must not hold
	// '{', '}' or white space.
	Prefix string
	// DedupeWindow is how long a caller-chosen message id stays known after
	// its message was enqueued (or, for a delayed message, after it was
	// due): enqueueing the id again within it is a no-op. Default 24h.
	DedupeWindow time.Duration
	// MaxCoalesce is the most concurrent Enqueue calls sent to Redis in one
	// pipeline. Default 512.
	MaxCoalesce int
	// DisableWakeups stops enqueues from publishing wake-ups. Default
	// false: every enqueue that adds a message publishes the queue's name on
	// its owner's channel, when the queue has one (one PUBLISH per script
	// call, not per message, delivered to the owner alone).
	DisableWakeups bool
	// Clock stamps generated ids and enqueued_at, and is the "now" of
	// EnqueueIn. Default: the system clock.
	Clock drover.Clock
	// Logger receives the Store's few log lines (wake-up subscription
	// trouble). Default: a null logger.
	Logger hclog.Logger
	// Durable, when Replicas > 0, acknowledges an enqueue only once that
	// many replicas confirm its write (WAIT; WAITAOF with AOF) within
	// Durable.Timeout, and otherwise returns a NotReplicatedError (wrapping
	// drover.ErrOutcomeUnknown) naming the ids to enqueue again
	// (durable.go). Default: off, an enqueue is acknowledged once the
	// master has it. Not available on Redis Cluster (New refuses it).
	Durable Durable
	// Tracer, when set, gives every Enqueue a producer span and writes its
	// W3C trace context into the envelope's headers (traceparent,
	// tracestate). Default nil: tracing off, no header written.
	Tracer *tracing.Tracer
}

// Store is a Redis-backed set of queues: the log of each queue, its delayed
// set, dead letters and dedupe window (docs/redis-schema.md). It keeps the
// client and what every role shares (the key prefix, ids, tracing, the
// layout mark, Ping); what is done with the queues is on its roles, small
// types sharing the client, one per kind of caller (roles.go): Producer,
// Log (a queue's owner), Dead, Jobs, Inspector, Operator, Families,
// Listener, and Schedules. It is safe for concurrent use and starts no
// goroutines of its own (Listener.Wakeups starts one, tied to the context
// it is given).
type Store struct{ *core }

// core is the client and the state every role of a Store shares.
type core struct {
	rdb          redis.UniversalClient
	keys         keyspace
	dedupeWindow time.Duration
	clock        drover.Clock
	log          hclog.Logger
	ids          idSource
	wakeups      bool
	batcher      coalescer
	tracer       *tracing.Tracer
	durable      *durability // nil: acknowledged once the master has it
	redisNow     redisClock  // the lone enqueue's estimate of Redis's clock
	routes       routeCache  // the lone enqueue's routes of its queues' owners
	lone         loneConn    // the lone enqueue's connection, kept from call to call

	// Enqueue script arguments that never change: ARGV[1] and ARGV[2].
	dedupeWindowArg string
	unownedChannel  string

	// known holds the queues this Store has added to the queue registry and
	// sent to in the last knownFor or two, so that the SADD is sent once
	// per process and queue while the queue is in use.
	known *recent[struct{}]
}

// New validates cfg and returns a Store.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("%w: queue.Config.Client is required", drover.ErrInvalidConfig)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(cfg.Prefix, "{}") || strings.IndexFunc(cfg.Prefix, unicode.IsSpace) >= 0 {
		return nil, fmt.Errorf("%w: queue.Config.Prefix %q holds a brace or white space", drover.ErrInvalidConfig, cfg.Prefix)
	}
	if cfg.DedupeWindow < 0 {
		return nil, fmt.Errorf("%w: queue.Config.DedupeWindow %s is negative", drover.ErrInvalidConfig, cfg.DedupeWindow)
	}
	if cfg.DedupeWindow == 0 {
		cfg.DedupeWindow = DefaultDedupeWindow
	}
	if cfg.MaxCoalesce < 0 {
		return nil, fmt.Errorf("%w: queue.Config.MaxCoalesce %d is negative", drover.ErrInvalidConfig, cfg.MaxCoalesce)
	}
	if cfg.MaxCoalesce == 0 {
		cfg.MaxCoalesce = DefaultMaxCoalesce
	}
	if err := cfg.Durable.validate(cfg.Client); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = drover.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	s := &core{
		rdb:          cfg.Client,
		keys:         keyspace{prefix: cfg.Prefix},
		dedupeWindow: cfg.DedupeWindow,
		clock:        cfg.Clock,
		log:          cfg.Logger,
		wakeups:      !cfg.DisableWakeups,
		tracer:       cfg.Tracer,
	}
	s.ids.now = cfg.Clock.Now
	s.redisNow.clock = cfg.Clock
	_, cluster := cfg.Client.(*redis.ClusterClient)
	s.routes.on, s.routes.clock = s.wakeups && !cluster, cfg.Clock
	s.routes.m = newRecent[*route](cfg.Clock, routeTTL)
	s.known = newRecent[struct{}](cfg.Clock, knownFor)
	if cfg.Durable.Replicas > 0 {
		s.durable = &durability{Durable: cfg.Durable, barrier: s.keys.durableBarrierChannel()}
	}
	s.dedupeWindowArg = formatInt(s.dedupeWindow.Milliseconds())
	s.unownedChannel = s.keys.unownedChannel()
	s.batcher = coalescer{max: cfg.MaxCoalesce, flush: s.flushEnqueues}
	return &Store{s}, nil
}

// Prefix returns the key prefix in use.
func (s *Store) Prefix() string { return s.keys.prefix }

// Tracer returns Config.Tracer (nil: tracing off), for the components that
// share the store's tracing.
func (s *Store) Tracer() *tracing.Tracer { return s.tracer }

// NewID returns a fresh message id: 26 characters, sortable by creation
// time, unique (ULID layout).
func (s *Store) NewID() (string, error) { return s.ids.next() }

// queueKeys validates a queue name and returns its keys.
func (s *core) queueKeys(queue string) (*queueKeys, error) {
	if err := drover.ValidateQueueName(queue); err != nil {
		return nil, err
	}
	return s.keys.queue(queue), nil
}

// run runs a script with EVALSHA, falling back to EVAL (which also caches
// it) when the server does not know the script.
func (s *core) run(ctx context.Context, sc *redis.Script, keys []string, args ...any) *redis.Cmd {
	return sc.Run(ctx, s.rdb, keys, args...)
}

// scriptCall is one call of a script sent in a batch (evalPipelined): the
// queues it covers, its keys and arguments (queue by queue, in that order),
// and, once the batch is sent, its reply.
type scriptCall struct {
	queues []string
	keys   []string
	args   []any
	cmd    *redis.Cmd
	// script, when set, is the call's script in place of evalPipelined's:
	// calls of two scripts in one pipeline.
	script *redis.Script
}

// slotCalls splits queues into the script calls one command may cover
// (slotGroups) and has add append each queue's keys and arguments to its
// call. It refuses an invalid queue name.
func (s *core) slotCalls(queues []string, per int, add func(c *scriptCall, q string)) ([]*scriptCall, error) {
	parts, err := s.slotGroups(queues, per)
	if err != nil {
		return nil, err
	}
	calls := make([]*scriptCall, len(parts))
	for i, part := range parts {
		c := &scriptCall{queues: part}
		for _, q := range part {
			add(c, q)
		}
		calls[i] = c
	}
	return calls, nil
}

// evalPipelined sends every call of sc (or of the call's own script) in
// one pipeline (EVALSHA), then sends again, with the source and in a
// second pipeline, only the calls
// the server refused because it did not know the script (its first use,
// or after a restart or SCRIPT FLUSH). Each call's reply or error is in
// its cmd.
func (s *core) evalPipelined(ctx context.Context, sc *redis.Script, calls []*scriptCall) {
	if len(calls) == 0 {
		return
	}
	pipe := s.rdb.Pipeline()
	for _, c := range calls {
		c.cmd = cmp.Or(c.script, sc).EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // errors are read per call
	var retry []*scriptCall
	for _, c := range calls {
		if isNoScript(c.cmd.Err()) {
			retry = append(retry, c)
		}
	}
	if len(retry) == 0 {
		return
	}
	pipe = s.rdb.Pipeline()
	for _, c := range retry {
		c.cmd = cmp.Or(c.script, sc).Eval(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx)
}

// isNoScript reports whether err says the server does not know a script.
func isNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}

// errNil reports whether err is Redis's "no such key/value" reply.
func errNil(err error) bool { return errors.Is(err, redis.Nil) }

// cluster reports whether the store runs on a Redis Cluster, where a
// script touches one slot only.
func (c *core) cluster() bool {
	_, ok := c.rdb.(*redis.ClusterClient)
	return ok
}

// withRetireIndex appends the retire index to a trim's KEYS, except on a
// Redis Cluster (another slot: the sweep's backstop finds the emptied
// queues there).
func (c *core) withRetireIndex(keys []string) []string {
	if c.cluster() {
		return keys
	}
	return append(keys, c.keys.retireIndex())
}
