// Package scheduler fires interval, cron and one-shot schedules into queues
// while this process is the elected scheduler leader.
//
// Entries live in a Store (Redis: queue.ScheduleStore) in the shape of
// docs/scheduler.md: an index of names scored by their next due time (Unix
// seconds) and one definition per name. Any program can add an entry by
// writing its definition and giving it score 0; the leader plans it.
//
// The leader loop (Scheduler.Run) waits for a term of Leadership, then
// repeatedly reads only the due entries, enqueues each slot with the
// deterministic id sched:<name>:<slot-unix> (an id already present is a
// no-op), advances the entry's score to its next slot with a
// compare-and-set, and sleeps until the next due entry or PollInterval. Two
// schedulers acting as leader at once therefore cannot fire a slot twice.
//
// Slot semantics (daylight-saving changes, catch-up after downtime, jitter)
// are documented on cronSeq, planDue and in docs/scheduler.md. The package
// sees neither Redis nor ZooKeeper: it depends on the small interfaces in
// ports.go, which cmd/drover wires to the queue and coordinator packages.
package scheduler
