package queue

import "sync"

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "drover"

// Every Redis key and channel name this package uses is built in this file.
//
// A queue's keys all carry the hash tag {<queue>}, so that they live in one
// Redis Cluster slot and one Lua script may touch them all. Keys outside a
// queue's slot (the queue registry, the wake-up channel) are never touched by
// the same script as a queue's keys.

// keyspace builds key names under one prefix.
type keyspace struct {
	prefix string
	cache  sync.Map // queue name → *queueKeys
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
}

// queue returns the keys of queue q. q must be a valid queue name.
func (k *keyspace) queue(q string) *queueKeys {
	if v, ok := k.cache.Load(q); ok {
		return v.(*queueKeys)
	}
	base := k.prefix + ":{" + q + "}:"
	qk := &queueKeys{
		log:     base + "log",
		msg:     base + "msg",
		seq:     base + "seq",
		delayed: base + "delayed",
		dead:    base + "dead",
		deadmsg: base + "deadmsg",
		seen:    base + "seen",
		owner:   base + "owner",
		done:    base + "done",
	}
	v, _ := k.cache.LoadOrStore(q, qk)
	return v.(*queueKeys)
}

// queues is the SET of every queue name ever enqueued to.
func (k *keyspace) queues() string { return k.prefix + ":queues" }

// memberChannel is the Pub/Sub channel of one member: enqueues to the queues
// it owns publish their wake-ups there (the queue's :owner key names it), so
// a wake-up reaches the owner only.
func (k *keyspace) memberChannel(member string) string { return k.prefix + ":wakeup:" + member }

// unownedChannel carries the wake-ups of queues no member owns (no :owner
// key): nobody but observers (the autoscaler) listens to it.
func (k *keyspace) unownedChannel() string { return k.prefix + ":wakeup-unowned" }

// audit is the LIST of audit records of the console's mutations, newest
// first.
func (k *keyspace) audit() string { return k.prefix + ":audit" }
