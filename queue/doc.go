// Package queue keeps Drover's queues in Redis: the key schema, the Lua
// scripts, enqueue (single, coalesced and batched, idempotent by id), batch
// reads after an offset, delayed messages, retries, dead letters, trim and
// backlog measurement. It is the only package that imports go-redis.
//
// The layout is documented for other languages in docs/redis-schema.md; key
// names are built in keys.go and every script, with its KEYS and ARGV, is in
// scripts.go. Each script touches the keys of one queue only, which share the
// hash tag {<queue>}, so everything works on Redis Cluster as well as on a
// standalone or Sentinel-managed server (see NewClient).
//
// A queue is a sorted set of message ids scored by position (microseconds
// from Redis TIME, strictly increasing per queue) plus a hash of envelopes.
//
// A Store keeps the client and what is common; its abilities are on roles,
// one per kind of caller (roles.go). Producers use store.Producer()
// (Enqueue, EnqueueAt/EnqueueIn, EnqueueBatch). The queue's owner uses
// store.Log(): it reads in batches after its committed offset (ReadAfter,
// ReadMany), promotes due delayed messages (PromoteMany), schedules
// retries (Retry), dead-letters what fails for good (DeadLetter) and trims
// what is done (Trim, TrimMany); idle owners learn about new messages from
// store.Listener().Wakeups. Operators and consoles use store.Dead(),
// store.Jobs(), store.Inspector() and store.Operator(); the family
// registrar uses store.Families(); schedules live in store.Schedules().
//
// Envelopes are decoded lazily (drover.LogEntry.Decode), so reading stays cheap; a
// missing or undecodable envelope is a *PoisonError, never a panic and never
// a reason to stop the queue.
package queue
