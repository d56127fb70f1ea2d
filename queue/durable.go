package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

// Durable enqueue: an enqueue is acknowledged only once Redis confirms that
// its write reached Replicas replicas (WAIT), or was written to the
// append-only file of the master and of Replicas replicas (WAITAOF, Redis
// 7.2+), within Timeout. Redis replicates asynchronously: without this, a
// master that acknowledged a write and failed before sending it to a replica
// takes the write with it when Sentinel promotes the replica
// (docs/semantics.md, "What an acknowledged enqueue survives").
//
// WAIT counts the replicas that acknowledged the connection's replication
// offset. The confirmation therefore goes in the same pipeline as the
// enqueue scripts (one connection, one round trip), after a barrier: a
// PUBLISH on a channel nobody listens to, which Redis replicates like a
// write. The barrier makes WAIT cover everything the master held when it
// ran, so a retry answered "duplicate" — its message written by an earlier
// attempt, perhaps on another connection, perhaps not replicated yet — is
// confirmed too, not acknowledged on the strength of an older write. Redis
// up to 7.0 sets a connection's offset to the master's after every command,
// reads included, so there the barrier changes nothing; servers that set
// it only after the connection's own writes (7.2's WAITAOF work) need it.

// Durable configures the durable enqueue mode (Config.Durable). The zero
// value is off.
type Durable struct {
	// Replicas is how many replicas must confirm an enqueue's write before
	// it is acknowledged. 0: the mode is off.
	Replicas int
	// Timeout bounds the wait for the replicas; an enqueue not confirmed
	// within it returns an error wrapping drover.ErrOutcomeUnknown
	// (NotReplicatedError). Required when Replicas > 0; it must be below
	// the client's read timeout (a pipeline's replies are read under it).
	Timeout time.Duration
	// AOF also waits for the append-only file's fsync, on the master and on
	// the Replicas replicas (WAITAOF: Redis 7.2 or later; an older server
	// makes every enqueue fail, before anything is sent, with an error
	// saying so). Default false: WAIT (the replicas hold the write in
	// memory).
	AOF bool
}

// durableMargin is how far below the client's read timeout Durable.Timeout
// must stay: the pipeline carrying WAIT is read under the read timeout,
// which must not expire first.
const durableMargin = 500 * time.Millisecond

// validate checks d against the client it will run on.
func (d Durable) validate(rdb redis.UniversalClient) error {
	if d.Replicas == 0 {
		if d.Timeout != 0 || d.AOF {
			return fmt.Errorf("%w: queue.Config.Durable: a timeout or aof without replicas (0 replicas: the mode is off)", drover.ErrInvalidConfig)
		}
		return nil
	}
	if d.Replicas < 0 {
		return fmt.Errorf("%w: queue.Config.Durable.Replicas %d is negative", drover.ErrInvalidConfig, d.Replicas)
	}
	if d.Timeout <= 0 {
		return fmt.Errorf("%w: queue.Config.Durable.Timeout is required (> 0) with %d replicas: WAIT 0 would block forever", drover.ErrInvalidConfig, d.Replicas)
	}
	if d.Timeout%time.Millisecond != 0 {
		return fmt.Errorf("%w: queue.Config.Durable.Timeout %s is not whole milliseconds", drover.ErrInvalidConfig, d.Timeout)
	}
	var rt time.Duration
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		rt = c.Options().ReadTimeout
	case *redis.Client:
		rt = c.Options().ReadTimeout
	}
	if rt > 0 && d.Timeout > rt-durableMargin {
		return fmt.Errorf("%w: queue.Config.Durable.Timeout %s must be at least %s below the client's read timeout %s", drover.ErrInvalidConfig, d.Timeout, durableMargin, rt)
	}
	return nil
}

// durability is the mode at work in a Store: the confirmation commands it
// adds to an enqueue pipeline, and what it learnt about the server.
type durability struct {
	Durable
	barrier string // the channel of the barrier PUBLISH

	mu        sync.Mutex
	aofServer bool // WAITAOF seen to exist
}

// ready reports whether the server can run the confirmation. For AOF it
// asks once whether the server knows WAITAOF (COMMAND INFO), so that an
// older server fails every enqueue before anything is written rather than
// after.
func (d *durability) ready(ctx context.Context, rdb redis.UniversalClient) error {
	if !d.AOF {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.aofServer {
		return nil
	}
	info, err := rdb.Do(ctx, "COMMAND", "INFO", "WAITAOF").Slice()
	if err != nil {
		return fmt.Errorf("durable enqueue: ask whether Redis has WAITAOF: %w", err)
	}
	if len(info) == 0 || info[0] == nil {
		return fmt.Errorf("%w: redis durable aof needs WAITAOF (Redis 7.2 or later) and this server does not have it: upgrade, or set aof to false (WAIT: replicas confirm the write, not its fsync); nothing was enqueued", drover.ErrInvalidConfig)
	}
	d.aofServer = true
	return nil
}

// confirm adds the barrier and the wait to pipe, after the writes it must
// confirm, and returns what reads the answer once pipe has run: nil when
// the writes are confirmed, else why not. barrierKey is "" on a standalone
// or Sentinel client (the barrier is a PUBLISH); on a Redis Cluster, where
// a PUBLISH is not replicated (it travels the cluster bus), it is a key in
// a slot of the shard the pipeline goes to, and the barrier a SET of it
// that expires after a second (shard).
func (d *durability) confirm(ctx context.Context, pipe redis.Pipeliner, barrierKey string) func() error {
	if barrierKey == "" {
		pipe.Publish(ctx, d.barrier, "")
	} else {
		pipe.Set(ctx, barrierKey, "", time.Second)
	}
	if d.AOF {
		cmd := pipe.Do(ctx, "WAITAOF", 1, d.Replicas, d.Timeout.Milliseconds())
		return func() error {
			v, err := cmd.Int64Slice()
			switch {
			case err != nil:
				return fmt.Errorf("WAITAOF: %w", err)
			case len(v) != 2:
				return fmt.Errorf("WAITAOF answered %v, want [local replicas]", v)
			case v[0] < 1:
				return fmt.Errorf("not in the master's append-only file within %s (is appendonly on?)", d.Timeout)
			case int(v[1]) < d.Replicas:
				return fmt.Errorf("in the append-only file of %d of %d replicas within %s", v[1], d.Replicas, d.Timeout)
			}
			return nil
		}
	}
	cmd := pipe.Do(ctx, "WAIT", d.Replicas, d.Timeout.Milliseconds())
	return func() error {
		n, err := cmd.Int64()
		switch {
		case err != nil:
			return fmt.Errorf("WAIT: %w", err)
		case int(n) < d.Replicas:
			return fmt.Errorf("confirmed by %d of %d replicas within %s", n, d.Replicas, d.Timeout)
		}
		return nil
	}
}

// NotReplicatedError is an enqueue that Redis may hold but did not confirm
// as replicated (Durable): its write reached the master (or its outcome is
// not known at all), and a failover now could lose it. It wraps
// drover.ErrOutcomeUnknown. Enqueueing the same ids again is safe: a
// message already in is answered Duplicate and not written twice, and the
// retry is acknowledged only once the replicas confirm it.
type NotReplicatedError struct {
	// IDs are the messages concerned (every id the failed round trip
	// carried, including generated ones).
	IDs []string
	// Reason says what the confirmation answered.
	Reason error
}

func (e *NotReplicatedError) Error() string {
	return fmt.Sprintf("%v: enqueue of %s not confirmed by the replicas (%v): enqueue the same ids again", drover.ErrOutcomeUnknown, strings.Join(e.IDs, ", "), e.Reason)
}

// Unwrap returns drover.ErrOutcomeUnknown and the reason.
func (e *NotReplicatedError) Unwrap() []error { return []error{drover.ErrOutcomeUnknown, e.Reason} }

// mergeNotReplicated returns the error of a batch: the first error of reqs
// that is not a NotReplicatedError, else one NotReplicatedError naming the
// ids of every request that has one, else nil.
func mergeNotReplicated(reqs []*enqueueRequest) error {
	var first *NotReplicatedError
	var ids []string
	for _, r := range reqs {
		if r.err == nil {
			continue
		}
		var nr *NotReplicatedError
		if !errors.As(r.err, &nr) {
			return r.err
		}
		if first == nil {
			first = nr
		}
		ids = append(ids, r.id)
	}
	if first == nil {
		return nil
	}
	return &NotReplicatedError{IDs: ids, Reason: first.Reason}
}

// runConfirmed runs sc as run does and, in the durable mode, confirms its
// write as an enqueue is confirmed: the script, the barrier and the wait in
// one pipeline (sent again with the source after NOSCRIPT). The worker's
// retries and dead letters use it: the offset committed after them (in
// ZooKeeper, which a Redis failover does not touch) passes the message, so
// a retry or dead letter the failover lost would be a message lost. An
// unconfirmed write returns a NotReplicatedError naming id; the worker
// writes it again (both scripts are idempotent).
func (s *core) runConfirmed(ctx context.Context, sc *redis.Script, id string, keys []string, args ...any) error {
	if s.durable == nil {
		return s.run(ctx, sc, keys, args...).Err()
	}
	rdb, barrierKey, err := s.shard(ctx, keys[0])
	if err != nil {
		return err
	}
	send := func(eval func(pipe redis.Pipeliner) *redis.Cmd) (*redis.Cmd, error) {
		pipe := rdb.Pipeline()
		cmd := eval(pipe)
		confirmed := s.durable.confirm(ctx, pipe, barrierKey)
		_, _ = pipe.Exec(ctx) // read per command
		if cmd.Err() != nil {
			return cmd, cmd.Err()
		}
		if why := confirmed(); why != nil {
			return cmd, &NotReplicatedError{IDs: []string{id}, Reason: why}
		}
		return cmd, nil
	}
	cmd, err := send(func(pipe redis.Pipeliner) *redis.Cmd { return sc.EvalSha(ctx, pipe, keys, args...) })
	if isNoScript(cmd.Err()) {
		_, err = send(func(pipe redis.Pipeliner) *redis.Cmd { return sc.Eval(ctx, pipe, keys, args...) })
	}
	return err
}

// runConfirmedCmd runs the command add puts on a pipeline to the master
// holding key, confirmed by its replicas (the durable mode must be on): the
// command's error, else why it is not confirmed (a NotReplicatedError
// without ids), else nil.
func (s *core) runConfirmedCmd(ctx context.Context, key string, add func(pipe redis.Pipeliner) redis.Cmder) error {
	rdb, barrierKey, err := s.shard(ctx, key)
	if err != nil {
		return err
	}
	pipe := rdb.Pipeline()
	cmd := add(pipe)
	confirmed := s.durable.confirm(ctx, pipe, barrierKey)
	_, _ = pipe.Exec(ctx) // read per command
	if cmd.Err() != nil {
		return cmd.Err()
	}
	if why := confirmed(); why != nil {
		return &NotReplicatedError{Reason: why}
	}
	return nil
}

// On a Redis Cluster, WAIT counts the replicas of the node it runs on that
// acknowledged the connection's writes: it must go to each shard's master
// that a write went to, on the connection that wrote, after it. The durable
// mode therefore sends a pipeline per shard master (the cluster client's
// MasterForKey), each ending with its own barrier and wait; an enqueue is
// confirmed when the shard that holds its queue confirmed it.

// shard returns the client for the master holding key and the barrier key
// in key's slot: the Store's own client and "" when it is not a Cluster
// client.
func (s *core) shard(ctx context.Context, key string) (redis.UniversalClient, string, error) {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return s.rdb, "", nil
	}
	node, err := cc.MasterForKey(ctx, key)
	if err != nil {
		return nil, "", fmt.Errorf("find the cluster master of %s: %w", key, err)
	}
	return node, s.keys.prefix + ":durable-barrier:{" + hashTag(key) + "}", nil
}

// hashTag returns the part of key Redis Cluster hashes: the first {…}
// holding something, else the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// reloadOnMoved asks the cluster client to read the slot map again when err
// says a slot moved or a node is gone (a failover): the pipelines sent
// straight to a master do not do it themselves.
func (s *core) reloadOnMoved(ctx context.Context, err error) {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok || err == nil {
		return
	}
	msg := err.Error()
	if strings.Contains(msg, "MOVED") || strings.Contains(msg, "CLUSTERDOWN") || strings.Contains(msg, "READONLY") ||
		strings.Contains(msg, "connection refused") || strings.Contains(msg, "EOF") || strings.Contains(msg, "i/o timeout") {
		cc.ReloadState(ctx)
	}
}
