package check

import "time"

// Kind names a kind of fault.
type Kind string

// The fault kinds the harness injects.
const (
	WorkerKill     Kind = "worker-kill"     // kill -9 of a worker, restarted after a pause
	WorkerStop     Kind = "worker-stop"     // SIGSTOP of a worker past its session timeout, then SIGCONT
	ZKCutShort     Kind = "zk-cut-short"    // a worker's ZooKeeper links cut for less than the session timeout
	ZKCutLong      Kind = "zk-cut-long"     // … for longer than the session timeout
	ZKLeaderKill   Kind = "zk-leader-kill"  // kill -9 of the ZooKeeper leader, restarted
	ZKLeaderStop   Kind = "zk-leader-stop"  // SIGSTOP of the ZooKeeper leader past the session timeout, then SIGCONT
	RedisRestart   Kind = "redis-restart"   // SIGTERM of Redis (appendonly, fsync always), started again
	RollingRestart Kind = "rolling-restart" // SIGTERM and start of every worker, one after the other
	SchedulerKill  Kind = "scheduler-kill"  // kill -9 of the scheduler leader, restarted
	// RedisCut: one worker's Redis link cut (reset or blackholed, in turn)
	// for two to three session timeouts, past its redis_giveup_after: its
	// queues move to the others; its finished, uncommitted tasks repeat.
	RedisCut Kind = "redis-cut"
	// RedisCutAll: every worker's Redis link cut at once, for as long as
	// a redis-cut: no member reaches Redis, so the assignment must stand
	// (Fault.Moved counts the queues whose owner changed; any is a
	// violation).
	RedisCutAll Kind = "redis-cut-all"
	// WorkerFreeze: SIGSTOP, past its session timeout, of the worker that
	// owns a queue of long tasks (longer than the session timeout); its
	// tasks keep running, and its task lease must kill them.
	WorkerFreeze Kind = "worker-freeze"
	// HostFreeze: the same worker stopped together with its task groups and
	// its lease supervisor (a stall of its whole machine), all continued
	// at once.
	HostFreeze Kind = "host-freeze"
	// KeyChurn: the keys of a queue family with retire_after are
	// registered, run, retired and registered again all through the run
	// (tools/chaos/churn.go); each injection adds a burst of new keys.
	// It excuses nothing: a retirement or a new key must not lose, repeat
	// or overlap any message, of its own keys or of the others.
	KeyChurn Kind = "key-churn"
	// Sentinel: a failover of the run's Redis, a master with one replica
	// and three Sentinels (a run with this kind has that deployment):
	// kill -9 of the master or a graceful SENTINEL FAILOVER, in turn, under
	// load. The harness then looks on the new master for every message
	// acknowledged from a little before the fault until the old master was
	// gone or demoted (Fault.NotReplicated lists those absent). Every
	// worker loses Redis for the failover, as in a redis-cut-all.
	Sentinel Kind = "sentinel"

	// SessionLost is not injected: a worker reported its ZooKeeper session
	// lost (in its log). Most follow an injected fault; one that does not
	// (a worker starved of CPU past 2/3 of its session timeout) is counted
	// as unprovoked. The product promises duplicates for tasks in flight at
	// a session loss, so it excuses like a fault.
	SessionLost Kind = "session-lost"

	// Failover is not injected either: in a Sentinel run, Sentinel
	// replaced the master outside a sentinel fault (read from the
	// Sentinels' logs). A Redis restart that outlasts down-after, or a
	// master that a resync under load keeps silent that long, is failed
	// over as an injected one is, and loses what was not replicated yet
	// (a trim, a retirement, a start record): work may run again, as at a
	// sentinel fault. Its window runs from down-after before Sentinel
	// marked the master down to the switch; its After is a ZooKeeper
	// leader change's: a lost retirement shows as a queue registered
	// again, run after an assignment round.
	Failover Kind = "failover"

	// ZKElection is not injected either: the ZooKeeper ensemble lost its
	// leader outside an injected ZooKeeper fault (read from the servers'
	// logs: a follower's read of its leader timed out, or the leader lost
	// its quorum) and elected one again. On a loaded host a leader stalled
	// past syncLimit (2 s at the chaos settings) does that; every session
	// on a follower is cut, and a write in flight (a commit, a graceful
	// stop's release) may fail, so the work it covered runs again. Its
	// window runs from the first server's report of the loss to the first
	// "LEADING" after it; its After is a ZooKeeper leader change's.
	ZKElection Kind = "zk-election"
)

// Observed are the kinds read from the run's logs, not injected.
var Observed = []Kind{SessionLost, Failover, ZKElection}

// Kinds lists every fault kind in report order.
var Kinds = []Kind{WorkerKill, WorkerStop, ZKCutShort, ZKCutLong, ZKLeaderKill, ZKLeaderStop, RedisRestart, RollingRestart, SchedulerKill, WorkerFreeze, HostFreeze, RedisCut, RedisCutAll, KeyChurn, Sentinel}

// Freezes are the kinds that stop a worker process; the report gives the
// delay from each one's start to its worker's task lease firing.
var Freezes = []Kind{WorkerStop, WorkerFreeze, HostFreeze}

// Effect is what a kind of fault may legitimately cause.
type Effect struct {
	// Excuses: executions on a worker the fault hit may be repeated
	// elsewhere (duplicates) and may overlap another worker's (a zombie).
	Excuses bool
	// After is how long after the fault's end, in session timeouts, a
	// worker it hit may still run work it will lose: the time it takes to
	// notice that its session is gone.
	After float64
	// Leased: the worker's tasks are under its task lease, which kills
	// them before another member can claim the queue; an execution that
	// really ran (see Effect.Stopped) beside another worker's execution of
	// the queue is a violation, not an excused zombie.
	Leased bool
	// Stopped: the fault stopped the worker's tasks too (SIGSTOP of their
	// groups), so an execution did not run between Start and End.
	Stopped bool
}

// Effects holds the Effect of every Kind. A graceful rolling restart, a
// Redis restart and a killed scheduler excuse nothing.
var Effects = map[Kind]Effect{
	WorkerKill:     {Excuses: true, After: 0},
	WorkerStop:     {Excuses: true, After: 1, Leased: true},
	WorkerFreeze:   {Excuses: true, After: 1, Leased: true},
	HostFreeze:     {Excuses: true, After: 1, Leased: true, Stopped: true},
	ZKCutShort:     {Excuses: true, After: 1},
	ZKCutLong:      {Excuses: true, After: 1},
	ZKLeaderKill:   {Excuses: true, After: 2},
	ZKLeaderStop:   {Excuses: true, After: 2},
	RedisCut:       {Excuses: true, After: 1},
	RedisCutAll:    {Excuses: true, After: 1},
	RedisRestart:   {},
	RollingRestart: {},
	SchedulerKill:  {},
	KeyChurn:       {},
	Sentinel:       {Excuses: true, After: 1},
	SessionLost:    {Excuses: true, After: 0},
	Failover:       {Excuses: true, After: 2},
	ZKElection:     {Excuses: true, After: 2},
}

// Fault is one injected fault.
type Fault struct {
	Kind Kind `json:"kind"`
	// Target names what was hit: a worker, a ZooKeeper node, "redis", a
	// scheduler, or "workers" for a rolling restart.
	Target string `json:"target"`
	// PIDs are the worker processes the fault hit; empty means every
	// worker (ZooKeeper and Redis faults).
	PIDs  []int     `json:"pids,omitempty"`
	Start time.Time `json:"start"`
	// End is when the fault was lifted (the process continued, restarted,
	// the link restored).
	End  time.Time `json:"end"`
	Note string    `json:"note,omitempty"`
	// HandOver (redis-cut) is how long after the cut began the cut
	// worker's share of the assignment was empty: its queues had moved to
	// the members that reach Redis; 0 when that was not seen before the
	// link came back.
	HandOver time.Duration `json:"hand_over,omitempty"`
	// Moved (redis-cut-all) counts the queues whose owner in the
	// assignment differs between the cut's start and its end.
	Moved int `json:"moved,omitempty"`
	// NotReplicated (sentinel) lists the messages ("queue/id") the
	// producer had acknowledged that the new master does not hold: written
	// on the old master and never replicated. Checked counts the
	// acknowledged messages looked for.
	NotReplicated []string `json:"not_replicated,omitempty"`
	Checked       int      `json:"checked,omitempty"`
	// StopAt (rolling-restart) is when each worker process of PIDs was
	// sent SIGTERM: its graceful stop runs from then until it exits. The
	// workers go one after the other, so a worker's runs before its own
	// SIGTERM are ordinary runs, judged by the other faults. A run
	// directory written before this field has none: the whole restart
	// counts as every worker's stop.
	StopAt map[int]time.Time `json:"stop_at,omitempty"`
}

// hits reports whether the fault hit worker process pid.
func (f *Fault) hits(pid int) bool {
	if len(f.PIDs) == 0 {
		return true
	}
	for _, p := range f.PIDs {
		if p == pid {
			return true
		}
	}
	return false
}
