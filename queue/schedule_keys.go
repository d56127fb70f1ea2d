package queue

// Schedule keys (docs/scheduler.md). They live outside every queue's hash
// tag and no script touches more than one of them, so they work on Redis
// Cluster: the index is one key, each entry's hash another.

// scheduleIndex is the ZSET of entry names scored by next due time (Unix
// seconds; 0 = to be planned, +inf = parked).
func (k *keyspace) scheduleIndex() string { return k.prefix + ":schedule" }

// scheduleEntry is the HASH of one entry: fields definition and meta.
func (k *keyspace) scheduleEntry(name string) string { return k.prefix + ":sched:" + name }
