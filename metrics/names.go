package metrics

// Metric names. docs/metrics.md describes each: type, labels, unit, meaning.
// Names are joined with '_' and prefixed "drover_" by the sinks.
const (
	// Counters.
	TasksTotal       = "tasks_total"        // labels: queue, task, outcome
	EnqueuedTotal    = "enqueued_total"     // labels: queue
	DeadTotal        = "dead_letters_total" // labels: queue, reason
	RebalancesTotal  = "rebalances_total"
	QueuesMovedTotal = "queues_moved_total"
	SessionExpiries  = "session_expiries_total"
	Reconnects       = "reconnects_total"
	ScheduleFires    = "schedule_fires_total" // labels: schedule
	CommitsTotal     = "commits_total"        // labels: queue
	FencedTotal      = "fenced_total"         // labels: queue

	// Timers (milliseconds).
	TaskDuration     = "task_duration_ms" // labels: queue, task
	QueueLatency     = "queue_latency_ms" // position → start; labels: queue
	ZKConnect        = "zk_connect_ms"    //
	FetchDuration    = "fetch_ms"         // labels: queue
	CommitDuration   = "commit_ms"        // labels: queue
	RebalanceTime    = "rebalance_ms"     //
	ScheduleLateness = "schedule_late_ms" // labels: schedule

	// Gauges per queue (published by the owner).
	Lag       = "lag"                // messages after the committed offset
	OldestAge = "oldest_age_seconds" // age of the oldest unprocessed message
	Delayed   = "delayed"            // delayed and retrying messages
	Dead      = "dead"               // dead letters
	// Gauges per worker.
	InFlight    = "in_flight"
	OwnedQueues = "owned_queues"
	// Gauges per cluster (published by the rebalance leader).
	Members         = "members"
	Queues          = "queues"
	UnownedQueues   = "unowned_queues"
	SchedulerLeader = "scheduler_leader"
)
