package queue

import (
	"strings"
	"sync"
	"sync/atomic"
)

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "drover"

// Every Redis key and channel name this package uses is built in this file.
//
// A queue's keys all carry the hash tag {<queue>}, so that they live in one
// Redis Cluster slot and one Lua script may touch them all. Keys outside a
// queue's slot (the queue registry, the wake-up channel) are never touched by
// the same script as a queue's keys.

// maxCachedQueueKeys bounds the queues whose key names a keyspace keeps
// built. A worker owning 25,000 idle queues held ~500 bytes of names per
// queue for queues it never touched again (docs/decisions.md, "Issue 14:
// per-queue memory of an idle worker"). Past the bound the cache is emptied
// and refills with the queues in use.
const maxCachedQueueKeys = 4096

// keyspace builds key names under one prefix.
type keyspace struct {
	prefix string
	cache  sync.Map     // queue name → *queueKeys; at most about maxCachedQueueKeys
	cached atomic.Int64 // entries stored since the last clear
}

// queueKeys are the keys of one queue (docs/redis-schema.md).
type queueKeys struct {
	log     string // ZSET id → position
	msg     string // HASH id → envelope JSON
	seq     string // STRING last position handed out
	delayed string // ZSET id → due time (unix ms)
	dead    string // ZSET id → time dead-lettered (unix ms)
	deadmsg string // HASH id → envelope + failure fields
	seen    string // ZSET caller-chosen id → end of its dedupe window (unix ms)
	owner   string // STRING the wake-up channel of the queue's owner
	done    string // ZSET outcome record buckets "<n>:<start ms>" → expiry (unix ms); bucket <done>:<n>:<start> is a HASH id → record JSON
	// attempts is the old layout's HASH id → the starts recorded of the
	// message: they now live in :msg beside the envelope (startsField).
	// Only read to move them there (migrateStartsFunction) and deleted with
	// the message's other keys, for a fleet upgraded in place.
	attempts string
	// family is a STRING: the family whose bound admitted the queue
	// (enqueue-admitted), so that its retire gives the room back.
	family string

	enqueueOne []string // the KEYS of enqueueOneSource: log, msg, seq, owner
}

// startsSuffix ends the :msg field that holds a message's recorded starts
// (HINCRBY before each start): a message's attempt count lives beside its
// envelope, so it survives a move or a crash of its owner, a read gets both
// in one HMGET and a trim deletes both in one HDEL (docs/redis-schema.md,
// "Attempts"). A NUL byte: no id holds one (CheckID refuses control
// characters), so the field never names another message's envelope. The
// scripts write it as '\0a'.
const startsSuffix = "\x00a"

// startsField is the :msg field of message id's recorded starts.
func startsField(id string) string { return id + startsSuffix }

// queue returns the keys of queue q. q must be a valid queue name.
func (k *keyspace) queue(q string) *queueKeys {
	if v, ok := k.cache.Load(q); ok {
		return v.(*queueKeys)
	}
	qk := k.build(q)
	v, loaded := k.cache.LoadOrStore(q, qk)
	if !loaded && k.cached.Add(1) > maxCachedQueueKeys {
		// Concurrent stores may slip in around the clear: the bound is
		// approximate by the number of concurrent callers.
		k.cache.Clear()
		k.cached.Store(0)
	}
	return v.(*queueKeys)
}

// queueKeySuffixes are the last parts of a queue's keys, in the order
// build lays them out.
var queueKeySuffixes = [...]string{"log", "msg", "seq", "delayed", "dead", "deadmsg", "seen", "owner", "done", "attempts", "family"}

// build builds the keys of queue q in one string, each key a slice of it
// (writeQueueKey's names): three allocations (the string, the struct and
// enqueueOne's list) where a concatenation per key took thirteen. A worker
// of the sparse fleet owns about three times as many queues with work as
// the cache holds (maxCachedQueueKeys), so it builds keys at about the rate
// of its messages (docs/decisions.md, "Issue 43: a queue's key names in one
// allocation").
func (k *keyspace) build(q string) *queueKeys {
	var b strings.Builder
	n := 0
	for _, suffix := range queueKeySuffixes {
		n += k.queueKeyLen(q, suffix)
	}
	b.Grow(n)
	var ends [len(queueKeySuffixes)]int
	for i, suffix := range queueKeySuffixes {
		k.writeQueueKey(&b, q, suffix)
		ends[i] = b.Len()
	}
	all := b.String()
	var keys [len(queueKeySuffixes)]string
	start := 0
	for i, end := range ends {
		keys[i], start = all[start:end], end
	}
	qk := &queueKeys{
		log: keys[0], msg: keys[1], seq: keys[2], delayed: keys[3], dead: keys[4],
		deadmsg: keys[5], seen: keys[6], owner: keys[7], done: keys[8],
		attempts: keys[9], family: keys[10],
	}
	qk.enqueueOne = []string{qk.log, qk.msg, qk.seq, qk.owner}
	return qk
}

// seq is queue q's :seq key, built without caching: the idle backstop reads
// the head of every parked queue and must not fill the cache with them.
func (k *keyspace) seq(q string) string { return k.prefix + ":{" + q + "}:seq" }

// writeQueueKey writes to b queue q's key named by suffix, the last part
// of one of queueKeys' ("seq", "log", "delayed"…), as queue builds it,
// without building or caching the others: the idle backstop writes the keys
// of hundreds of queues into one string, not a string per key.
func (k *keyspace) writeQueueKey(b *strings.Builder, q, suffix string) {
	b.WriteString(k.prefix)
	b.WriteString(":{")
	b.WriteString(q)
	b.WriteString("}:")
	b.WriteString(suffix)
}

// queueKeyLen is the length of the key writeQueueKey writes.
func (k *keyspace) queueKeyLen(q, suffix string) int {
	return len(k.prefix) + len(":{}:") + len(q) + len(suffix)
}

// queues is the SET of every queue name enqueued to, until the queue
// retires (Families.Retire removes its entry).
func (k *keyspace) queues() string { return k.prefix + ":queues" }

// familyQueues is the HASH family → how many queues the admission of HTTP
// producers brought into the family and no retire has removed since
// (enqueue-admitted adds one, retire takes it off): what a family's
// max_queues is checked against. Not kept on a Redis Cluster: it is in
// another slot than the queues.
func (k *keyspace) familyQueues() string { return k.prefix + ":family-queues" }

// retireIndex is the ZSET of queues whose log a trim emptied, scored by
// when (unix ms): the family retire sweep's candidates (trim and
// trim-many note them, the retire script drops or postpones them;
// docs/decisions.md, "Issue 40: the retire sweep visits the emptied
// queues"). Not kept on a Redis Cluster: it is in another slot than the
// queues.
func (k *keyspace) retireIndex() string { return k.prefix + ":retire-index" }

// memberChannel is the Pub/Sub channel of one member: enqueues to the queues
// it owns publish their wake-ups there (the queue's :owner key names it), so
// a wake-up reaches the owner only.
func (k *keyspace) memberChannel(member string) string { return k.prefix + ":wakeup:" + member }

// entryChannel is the channel a member routes its queues to (RouteWakeups)
// when it understands wake-ups that carry a lone message (parseWakeup): the
// enqueue-one script attaches the entry only on a channel named so (it
// looks for ":wake-e:"). Members of older versions subscribe to
// memberChannel only, and never receive the new payload.
func (k *keyspace) entryChannel(member string) string { return k.prefix + entryChannelMark + member }

// entryChannelMark is what names an entry channel; enqueueOneSource looks
// for it.
const entryChannelMark = ":wake-e:"

// batchChannel is the channel a member routes its queues to (RouteWakeups)
// when it also understands a wake-up that carries several queues' messages
// (parseWakeupBatch): the enqueue-spread script sends the wake-ups of one
// call that go to one batch channel as one PUBLISH (docs/decisions.md,
// "Issue 43: a fleet's batch in one call, its wake-ups one per owner").
// On it, the lone scripts send what they send on an entry channel.
// Members of older versions subscribe to memberChannel and entryChannel
// only, and never receive the batch payload.
func (k *keyspace) batchChannel(member string) string { return k.prefix + batchChannelMark + member }

// batchChannelMark is what names a batch channel; the enqueue scripts
// look for it.
const batchChannelMark = ":wake-b:"

// durableBarrierChannel is the channel of the durable mode's barrier: a
// PUBLISH nobody listens to, sent for its replication (durable.go).
func (k *keyspace) durableBarrierChannel() string { return k.prefix + ":durable-barrier" }

// unownedChannel carries the wake-ups of queues no member owns (no :owner
// key): nobody but observers (the autoscaler) listens to it.
func (k *keyspace) unownedChannel() string { return k.prefix + ":wakeup-unowned" }

// audit is the LIST of audit records of the console's mutations, newest
// first.
func (k *keyspace) audit() string { return k.prefix + ":audit" }

// auditRefusals is the LIST of sampled refusals and per-source refusal
// counts (audit_refusals.go), newest first: apart from audit, so that a
// flood of refused requests cannot push a mutation out of it.
func (k *keyspace) auditRefusals() string { return k.prefix + ":audit:refusals" }

// revokedSessions is the ZSET of console sessions ended by a logout, scored
// by the unix second each would have expired (sessions.go).
func (k *keyspace) revokedSessions() string { return k.prefix + ":sessions:revoked" }
