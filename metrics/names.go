package metrics

// Metric names. A Recorder is given these names; the sinks put "drover" in
// front (Prometheus: "drover_" + name, statsd: "drover." + name, label values
// appended). docs/metrics.md describes each one; Catalog lists them with
// their kind, labels and unit, and a test holds the two together.
const (
	// Counters of the worker runtime.
	// A Recorder is given the queue ("queue" label); the Registry exports
	// the queue's group instead ("group" label, see SetupConfig.Groups), so
	// that the series do not grow with the number of queues.
	TasksTotal    = "tasks_total"        // labels: queue → group, task, outcome
	DeadTotal     = "dead_letters_total" // labels: queue → group, reason
	CommitsTotal  = "commits_total"      // labels: queue → group
	FencedTotal   = "fenced_total"       // labels: queue → group
	EnqueuedTotal = "enqueued_total"     // labels: queue → group
	// Counter of the console's producer API (POST and DELETE
	// /api/v1/queues/{queue}/jobs), which is not audited.
	ProducerRequests = "producer_requests_total" // labels: action, status
	// Counters of the membership.
	RebalancesTotal  = "rebalances_total"
	QueuesMovedTotal = "queues_moved_total"
	// Removals and the corrections of balance after them (issue 40).
	QueuesRemovedTotal = "queues_removed_total"
	BalanceCorrections = "balance_corrections_total"
	BalanceQueuesMoved = "balance_queues_moved_total"
	SessionExpiries    = "session_expiries_total"
	Reconnects         = "reconnects_total"
	// A claim found the session's ZooKeeper server disagreeing with the
	// ensemble's leader (coordinator.ErrServerDisagrees).
	ZKServerDisagreements = "zookeeper_server_disagreements_total"

	// Timers, in milliseconds.
	TaskDuration   = "task_duration_ms" // labels: queue → group, task
	QueueLatency   = "queue_latency_ms" // enqueue (position) → first start; labels: queue → group
	FetchDuration  = "fetch_ms"         // per worker
	CommitDuration = "commit_ms"        // per worker
	ZKConnect      = "zk_connect_ms"    // a new ZooKeeper session
	RebalanceTime  = "rebalance_ms"     // one rebalance round of the leader

	// Gauges per queue, published by the queue's owner from
	// queue.Log.Backlog. They expire when not set again (see
	// SetupConfig.GaugeRetention), so a queue's former owner stops
	// reporting it. Prometheus gets them only for the queues
	// SetupConfig.Detail chooses, and the group aggregates below for all.
	Lag       = "lag"                // messages after the committed offset
	OldestAge = "oldest_age_seconds" // how long the first message after the offset has waited
	Delayed   = "delayed"            // scheduled and retrying messages
	Dead      = "dead"               // dead letters held
	// Aggregates of the per-queue gauges by group, computed at each scrape
	// from the queues' latest values (never recorded through a Recorder).
	GroupLag           = "group_lag"                // sum; labels: group
	GroupOldestAge     = "group_oldest_age_seconds" // largest; labels: group
	GroupDelayed       = "group_delayed"            // sum; labels: group
	GroupDead          = "group_dead"               // sum; labels: group
	GroupQueuesWithLag = "group_queues_with_lag"    // queues with lag > 0; labels: group
	// Gauges per process.
	InFlight    = "in_flight"    // tasks running now
	OwnedQueues = "owned_queues" // queues this worker owns
	// Gauges of the whole cluster, published by the rebalance leader. They
	// expire like the per-queue gauges, so a former leader stops reporting.
	Members         = "cluster_members"           // registered members
	Queues          = "cluster_queues"            // registered queues
	UnownedQueues   = "cluster_unowned_queues"    // assigned-to-nobody or unclaimed queues
	SchedulerLeader = "cluster_scheduler_leaders" // 1 when /election/scheduler has a leader, else 0
	// Gauges per queue selection (scaler.selections), published once for
	// the fleet by `drover scaler`, so that a sum over scrapes cannot count
	// a queue twice.
	AutoscaleLag           = "autoscale_lag"                // sum of the selection's lags; labels: selection
	AutoscaleQueuesWithLag = "autoscale_queues_with_lag"    // selected queues with lag; labels: selection
	AutoscaleOldestAge     = "autoscale_oldest_age_seconds" // largest oldest age; labels: selection
	AutoscaleWorkersNeeded = "autoscale_workers_needed"     // ceil(clamped lag / target lag); labels: selection, target_lag

	// Emitted by package scheduler.
	ScheduleFires      = "schedule_fires"            // counter; labels: queue → group
	ScheduleDuplicates = "schedule_duplicates"       // counter; labels: queue → group
	ScheduleSkipped    = "schedule_skipped"          // counter; labels: queue → group
	ScheduleInvalid    = "schedule_invalid"          // counter
	ScheduleLateness   = "schedule_lateness_seconds" // summary; labels: queue → group
	SchedulerLeading   = "scheduler_leader"          // gauge: 1 while this process fires
)

// Kind is how a metric aggregates.
type Kind string

// The kinds. A summary is exported by Prometheus as <name>{quantile=…},
// <name>_sum and <name>_count; a histogram as <name>_bucket{le=…},
// <name>_sum and <name>_count. Both are recorded with AddSample.
const (
	Counter   Kind = "counter"
	Gauge     Kind = "gauge"
	Summary   Kind = "summary"
	Histogram Kind = "histogram"
)

// MillisecondBuckets are the upper bounds of the histograms in
// milliseconds: fine where the runtime's targets are (10 ms, 100 ms), up to
// five minutes for subprocess tasks. A series costs about 1.5 KB whatever
// it records, where a summary's quantile streams grew to ~70 KB per series
// of a busy queue (docs/decisions.md, "Per-task metrics …").
var MillisecondBuckets = []float64{0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000}

// Def describes one metric.
type Def struct {
	Name   string   // as given to a Recorder, without "drover"
	Kind   Kind     //
	Labels []string // label names, sorted
	Unit   string   // "" for a plain count
	Help   string   // one line: what it measures
	// Expires marks gauges published periodically by whoever currently
	// owns the thing measured (a queue's owner, the rebalance leader):
	// Prometheus forgets them after SetupConfig.GaugeRetention without a new
	// value. Other gauges are kept for the life of the process; labelled
	// counters and timers for SetupConfig.SeriesRetention without a value.
	Expires bool
	// Detail marks the per-queue backlog gauges: Prometheus exports them
	// only for the queues SetupConfig.Detail chooses at each scrape.
	Detail bool
	// Aggregate marks gauges computed at each scrape from the Detail
	// gauges of every queue, by group; nothing records them.
	Aggregate bool
}

// catalog is every metric a drover process exports, in the order of
// docs/metrics.md.
var catalog = []Def{
	{Name: TasksTotal, Kind: Counter, Labels: []string{"group", "outcome", "task"}, Help: "Task attempts that ended, by outcome (success, retry, failure, timeout, aborted)."},
	{Name: DeadTotal, Kind: Counter, Labels: []string{"group", "reason"}, Help: "Messages moved to the dead-letter list, by reason (failure, retry, timeout, poison, no_route)."},
	{Name: CommitsTotal, Kind: Counter, Labels: []string{"group"}, Help: "Offset commits accepted by ZooKeeper."},
	{Name: FencedTotal, Kind: Counter, Labels: []string{"group"}, Help: "Offset commits refused because another member owns the queue now."},
	{Name: EnqueuedTotal, Kind: Counter, Labels: []string{"group"}, Help: "Messages enqueued by this process (its scheduler's fires, its HTTP producer API)."},
	{Name: ProducerRequests, Kind: Counter, Labels: []string{"action", "status"}, Help: "Requests to the console's producer API (job.enqueue, job.revoke), by HTTP status."},
	{Name: RebalancesTotal, Kind: Counter, Help: "Assignments written by this process while it led the rebalance."},
	{Name: QueuesMovedTotal, Kind: Counter, Help: "Queues given to a different member by those assignments."},
	{Name: QueuesRemovedTotal, Kind: Counter, Help: "Queues taken out of the assignment without a whole computation (retired or deleted)."},
	{Name: BalanceCorrections, Kind: Counter, Help: "Paced corrections of balance after removals written by this process while it led the rebalance."},
	{Name: BalanceQueuesMoved, Kind: Counter, Help: "Queues (idle ones, when the leader can tell) moved by those corrections."},
	{Name: SessionExpiries, Kind: Counter, Help: "ZooKeeper sessions of this process that expired."},
	{Name: Reconnects, Kind: Counter, Help: "ZooKeeper reconnections within a live session."},
	{Name: ZKServerDisagreements, Kind: Counter, Help: "Claims refused because the session's ZooKeeper server disagreed with the ensemble's leader on a node's version (its data tree diverged); the session moves to another server."},

	{Name: TaskDuration, Kind: Histogram, Labels: []string{"group", "task"}, Unit: "milliseconds", Help: "How long one attempt ran."},
	{Name: QueueLatency, Kind: Histogram, Labels: []string{"group"}, Unit: "milliseconds", Help: "From a message's position (enqueue time) to the start of its first attempt."},
	{Name: FetchDuration, Kind: Summary, Unit: "milliseconds", Help: "One read round trip: a queue log, or the logs read together (all queues of the worker)."},
	{Name: CommitDuration, Kind: Summary, Unit: "milliseconds", Help: "One fenced offset commit (all queues of the worker)."},
	{Name: ZKConnect, Kind: Summary, Unit: "milliseconds", Help: "Establishing a ZooKeeper session."},
	{Name: RebalanceTime, Kind: Summary, Unit: "milliseconds", Help: "One rebalance round: settle, compute, write the assignment."},

	{Name: Lag, Kind: Gauge, Labels: []string{"queue"}, Help: "Messages in the log after the committed offset.", Expires: true, Detail: true},
	{Name: OldestAge, Kind: Gauge, Labels: []string{"queue"}, Unit: "seconds", Help: "How long the first message after the committed offset has waited (0 when lag is 0).", Expires: true, Detail: true},
	{Name: Delayed, Kind: Gauge, Labels: []string{"queue"}, Help: "Scheduled and retrying messages waiting for their time.", Expires: true, Detail: true},
	{Name: Dead, Kind: Gauge, Labels: []string{"queue"}, Help: "Dead letters held for the queue.", Expires: true, Detail: true},
	{Name: GroupLag, Kind: Gauge, Labels: []string{"group"}, Help: "Messages after the committed offsets of the group's queues owned here.", Aggregate: true},
	{Name: GroupOldestAge, Kind: Gauge, Labels: []string{"group"}, Unit: "seconds", Help: "The largest oldest-message age among the group's queues owned here.", Aggregate: true},
	{Name: GroupDelayed, Kind: Gauge, Labels: []string{"group"}, Help: "Scheduled and retrying messages of the group's queues owned here.", Aggregate: true},
	{Name: GroupDead, Kind: Gauge, Labels: []string{"group"}, Help: "Dead letters held for the group's queues owned here.", Aggregate: true},
	{Name: GroupQueuesWithLag, Kind: Gauge, Labels: []string{"group"}, Help: "Queues of the group owned here with at least one message after their offset.", Aggregate: true},
	{Name: InFlight, Kind: Gauge, Help: "Tasks running in this worker."},
	{Name: OwnedQueues, Kind: Gauge, Help: "Queues this worker owns."},
	{Name: Members, Kind: Gauge, Help: "Registered members (rebalance leader's view).", Expires: true},
	{Name: Queues, Kind: Gauge, Help: "Registered queues (rebalance leader's view).", Expires: true},
	{Name: UnownedQueues, Kind: Gauge, Help: "Queues without an owner: unassigned, or assigned but not claimed.", Expires: true},
	{Name: SchedulerLeader, Kind: Gauge, Help: "1 when a scheduler holds the election, else 0 (rebalance leader's view).", Expires: true},

	{Name: AutoscaleLag, Kind: Gauge, Labels: []string{"selection"}, Help: "Messages after the committed offsets of the selection's queues (drover scaler).", Expires: true},
	{Name: AutoscaleQueuesWithLag, Kind: Gauge, Labels: []string{"selection"}, Help: "Queues of the selection with at least one message after their offset (drover scaler).", Expires: true},
	{Name: AutoscaleOldestAge, Kind: Gauge, Labels: []string{"selection"}, Unit: "seconds", Help: "The largest oldest-message age among the selection's queues (drover scaler).", Expires: true},
	{Name: AutoscaleWorkersNeeded, Kind: Gauge, Labels: []string{"selection", "target_lag"}, Help: "Workers that keep every queue of the selection at or under the target lag: ceil(min(lag, queues with lag × target) / target) (drover scaler).", Expires: true},

	{Name: ScheduleFires, Kind: Counter, Labels: []string{"group"}, Help: "Schedule slots enqueued by the scheduler leader."},
	{Name: ScheduleDuplicates, Kind: Counter, Labels: []string{"group"}, Help: "Slots another scheduler had already enqueued."},
	{Name: ScheduleSkipped, Kind: Counter, Labels: []string{"group"}, Help: "Missed slots not fired because of the entry's catch-up policy."},
	{Name: ScheduleInvalid, Kind: Counter, Help: "Schedule entries that could not be parsed and were skipped."},
	{Name: ScheduleLateness, Kind: Summary, Labels: []string{"group"}, Unit: "seconds", Help: "How late after its due time a slot was enqueued."},
	{Name: SchedulerLeading, Kind: Gauge, Help: "1 while this process is the scheduler leader, else 0."},
}

// Catalog returns every metric a drover process exports. The slice is a
// copy.
func Catalog() []Def {
	out := make([]Def, len(catalog))
	copy(out, catalog)
	return out
}

// Namespace is the first part of every key.
const Namespace = "drover"

// PrometheusName is the name the Prometheus sink exports name under:
// "drover_" + name, with the characters go-metrics' Prometheus sink replaces
// (space . = - /) turned into '_'.
func PrometheusName(name string) string {
	return promReplacer.Replace(Namespace + "_" + name)
}

// PrometheusSeries returns the series names Prometheus scrapes for d: the
// name itself, for a summary also <name>_sum and <name>_count, and for a
// histogram <name>_bucket, <name>_sum and <name>_count.
func PrometheusSeries(d Def) []string {
	n := PrometheusName(d.Name)
	switch d.Kind {
	case Summary:
		return []string{n, n + "_sum", n + "_count"}
	case Histogram:
		return []string{n + "_bucket", n + "_sum", n + "_count"}
	}
	return []string{n}
}
