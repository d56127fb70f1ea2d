package check

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// Invariant names a property a run must keep.
type Invariant string

// The invariants Check verifies.
const (
	Lost Invariant = "lost" // an enqueued message or fired slot never ran
	// NeverReplicated: a message acknowledged to the producer by a master
	// that a Sentinel failover replaced is not on the new master (it may
	// have run before the failover; one that never ran is counted here,
	// not under Lost).
	NeverReplicated    Invariant = "never-replicated"
	OrderedOverlap     Invariant = "ordered-overlap"      // two executions of an ordered queue overlapped
	CrossWorkerOverlap Invariant = "cross-worker-overlap" // two workers ran one queue at once, neither under a fault
	DuplicateOutside   Invariant = "duplicate-outside-fault"
	DoubleEnqueue      Invariant = "double-enqueue"    // one id at two positions (a load message)
	SlotFiredTwice     Invariant = "slot-fired-twice"  // one id at two positions (a schedule slot)
	SlotMissed         Invariant = "slot-missed"       // a slot before the entry's next one never fired
	OffsetBackwards    Invariant = "offset-backwards"  // a committed offset moved back
	OffsetBehind       Invariant = "offset-behind-end" // after the drain an offset does not cover its queue
	RanAfterCommit     Invariant = "ran-after-commit"  // a run, outside any fault, of a message already committed
	DrainIncomplete    Invariant = "drain-incomplete"  // a message or slot still queued when the drain gave up
	// LeasedOverlap: a frozen worker's task ran beside another worker's
	// execution of its queue (its task lease should have killed it).
	LeasedOverlap Invariant = "leased-overlap"
	// GracefulKill: a task was killed during a rolling restart (SIGTERM
	// of its worker, which must drain it); GracefulRepeat: a message ran
	// again after a run that ended during one (issue 29).
	GracefulKill   Invariant = "graceful-stop-kill"
	GracefulRepeat Invariant = "graceful-stop-repeat"
	// MovedWithoutRedis: queues changed owner while no worker reached
	// Redis (redis-cut-all): churn that cannot help.
	MovedWithoutRedis Invariant = "moved-while-redis-unreachable"
)

// maxDetails is how many violations of one invariant a Report lists.
const maxDetails = 20

// Violation is one broken invariant, with what shows it.
type Violation struct {
	Invariant Invariant `json:"invariant"`
	Detail    string    `json:"detail"`
}

// Report is what Check found.
type Report struct {
	Faults        map[Kind]int `json:"faults"`
	Enqueued      int          `json:"enqueued"`       // confirmed enqueues of the load
	SlotsExpected int          `json:"slots_expected"` // schedule slots that had to fire
	Executions    int          `json:"executions"`     // task log lines
	Messages      int          `json:"messages"`       // distinct messages executed

	// Parks counts the parks of ordered queues at a failed head, and
	// ParksUnresolved those still parked at the end (parked.go).
	Parks           int `json:"parks"`
	ParksUnresolved int `json:"parks_unresolved"`

	Lost int `json:"lost"`
	// LostNeverReplicated counts the lost messages that are never
	// replicated (Fault.NotReplicated): Lost − LostNeverReplicated is every
	// other loss. NeverReplicated counts every acknowledged message a
	// failover's new master did not hold, run or not; FailoverChecked how
	// many acknowledged messages the failovers looked for.
	LostNeverReplicated int `json:"lost_never_replicated"`
	NeverReplicated     int `json:"never_replicated"`
	FailoverChecked     int `json:"failover_checked"`
	// FailoverReenqueues counts messages and schedule slots that ran at
	// two positions across a Sentinel failover (check.go,
	// failoverReenqueue): not violations, at least once.
	FailoverReenqueues int `json:"failover_reenqueues"`
	Unfinished         int `json:"unfinished"`   // never ran, still queued when the drain gave up
	DeadLetters        int `json:"dead_letters"` // messages in the dead letters after the run
	// Duplicates counts executions beyond the first of each message.
	Duplicates int `json:"duplicates"`
	// DuplicatesAt counts excused duplicates by the kind of the fault
	// that covered the repeated execution.
	DuplicatesAt      map[Kind]int `json:"duplicates_at"`
	DuplicatesOutside int          `json:"duplicates_outside"` // messages repeated outside any fault
	RanAfterCommit    int          `json:"ran_after_commit"`   // runs outside any fault of committed messages
	OrderedOverlaps   int          `json:"ordered_overlaps"`
	// ZombieOverlaps counts overlaps of two workers' executions of a queue
	// excused because one of them ran on a worker under a fault.
	ZombieOverlaps      int `json:"zombie_overlaps"`
	CrossWorkerOverlaps int `json:"cross_worker_overlaps"`
	// LeasedOverlaps counts overlaps with a task of a worker frozen by a
	// Leased fault (violations).
	LeasedOverlaps int `json:"leased_overlaps"`
	// StoppedOverlaps counts executions that overlapped in time only
	// while one of them was stopped with its worker (HostFreeze): they
	// never ran at once.
	StoppedOverlaps int `json:"stopped_overlaps"`
	// LeaseFireDelays holds, per freeze kind, how long after each freeze
	// began the frozen worker's task lease fired; LeaseNoFire counts
	// freezes with no firing seen.
	LeaseFireDelays map[Kind][]time.Duration `json:"lease_fire_delays"`
	LeaseNoFire     map[Kind]int             `json:"lease_no_fire"`
	// RedisHandOvers holds each redis-cut's Fault.HandOver;
	// RedisNoHandOver counts the cuts whose queues had not moved by the
	// cut's end. MovedWithoutRedis sums redis-cut-all's Fault.Moved.
	RedisHandOvers    []time.Duration `json:"redis_hand_overs"`
	RedisNoHandOver   int             `json:"redis_no_hand_over"`
	MovedWithoutRedis int             `json:"moved_without_redis"`
	// SurvivedThaw counts executions of a HostFreeze's worker that were
	// running at the thaw and finished on their own; MaxRunAfterThaw is the
	// longest of them after the thaw.
	// ThawRaceOverlaps counts overlaps that exist only because a task of a
	// host-frozen worker finished within ThawRaceBound of the thaw, before
	// its lease killed it: outside the invariant, measured (MaxThawRace is
	// the longest time two such executions ran at once).
	ThawRaceOverlaps int           `json:"thaw_race_overlaps"`
	MaxThawRace      time.Duration `json:"max_thaw_race"`
	SurvivedThaw     int           `json:"survived_thaw"`
	MaxRunAfterThaw  time.Duration `json:"max_run_after_thaw"`
	// ZombieStarts counts tasks a worker started after SIGCONT and before
	// it noticed that its session had expired (not a violation by itself:
	// see the overlap and duplicate invariants).
	ZombieStarts        int      `json:"zombie_starts"`
	ZombieStartExamples []string `json:"zombie_start_examples,omitempty"`
	DoubleEnqueues      int      `json:"double_enqueues"`
	SlotsFiredTwice     int      `json:"slots_fired_twice"`
	SlotsMissed         int      `json:"slots_missed"`
	// UnprovokedSessionLosses counts SessionLost faults on a worker that no
	// injected fault hit at the time.
	UnprovokedSessionLosses int `json:"unprovoked_session_losses"`
	OffsetSamples           int `json:"offset_samples"`
	OffsetRegressions       int `json:"offset_regressions"`
	QueuesBehind            int `json:"queues_behind"`
	// MaxCommitLag is the longest time between an excused duplicate's
	// earlier execution ending and the fault starting: how close to
	// Policy.CommitWindow the run came.
	MaxCommitLag time.Duration `json:"max_commit_lag"`

	// KilledOutsideFaults counts runs killed with no fault to explain
	// them (planned moves whose drain timeout ran out: churn.go).
	KilledOutsideFaults        int      `json:"killed_outside_faults"`
	KilledOutsideFaultExamples []string `json:"killed_outside_fault_examples,omitempty"`
	// GracefulRepeatsExcused counts the runs that ended during their
	// worker's graceful stop and ran again, excused by an injected fault
	// or a shared session loss (stallExcuses) instead of failing
	// graceful-stop-repeat.
	GracefulRepeatsExcused int `json:"graceful_repeats_excused"`
	// EnsembleDiverged names the ZooKeeper servers whose logs say their
	// data tree diverged (set by the harness from the servers' logs, not
	// by Check): a finding about ZooKeeper, printed beside the invariants.
	EnsembleDiverged []string `json:"ensemble_diverged,omitempty"`
	// SessionMoves are the workers' log lines where a claim found its
	// session's server disagreeing with the leader and moved the session
	// (set by the harness from the workers' logs).
	SessionMoves []string `json:"session_moves,omitempty"`
	// KeyChurn is the family's keys' summary, when the run had them.
	KeyChurn *ChurnSummary `json:"key_churn,omitempty"`

	// Violations lists up to maxDetails examples per invariant;
	// ViolationCounts has the exact numbers.
	Violations      []Violation       `json:"violations"`
	ViolationCounts map[Invariant]int `json:"violation_counts"`
}

// OK reports whether no invariant was violated.
func (r *Report) OK() bool { return len(r.ViolationCounts) == 0 }

func (r *Report) violate(inv Invariant, format string, a ...any) {
	if r.ViolationCounts == nil {
		r.ViolationCounts = map[Invariant]int{}
	}
	r.ViolationCounts[inv]++
	if r.ViolationCounts[inv] <= maxDetails {
		r.Violations = append(r.Violations, Violation{Invariant: inv, Detail: fmt.Sprintf(format, a...)})
	}
}

// Run describes the run for the Markdown header.
type Run struct {
	Command  string        // the command line that produced it
	Duration time.Duration // the load and fault phase
	Load     string        // e.g. "300 msg/s over 50 queues (10 ordered), 100 schedules every 1s"
	Seed     int64
}

// Markdown writes the report as Markdown tables.
func (r *Report) Markdown(w io.Writer, run Run) {
	verdict := "PASS"
	if !r.OK() {
		verdict = "FAIL"
	}
	total := 0
	for _, k := range Kinds {
		total += r.Faults[k]
	}
	dupAt := func() string {
		var parts []string
		for _, k := range append(Kinds[:len(Kinds):len(Kinds)], Observed...) {
			if n := r.DuplicatesAt[k]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", k, n))
			}
		}
		if len(parts) == 0 {
			return ""
		}
		return " (at " + strings.Join(parts, ", ") + ")"
	}
	fmt.Fprintf(w, "Command: `%s` (seed %d)\n\n", run.Command, run.Seed)
	fmt.Fprintf(w, "| what | value |\n|---|---|\n")
	fmt.Fprintf(w, "| verdict | **%s** |\n", verdict)
	fmt.Fprintf(w, "| load and fault phase | %s |\n", run.Duration)
	fmt.Fprintf(w, "| load | %s |\n", run.Load)
	fmt.Fprintf(w, "| faults injected | %d |\n", total)
	fmt.Fprintf(w, "| worker sessions lost (from the worker logs) / with no injected fault at the time | %d / %d |\n", r.Faults[SessionLost], r.UnprovokedSessionLosses)
	fmt.Fprintf(w, "| messages enqueued (confirmed) | %d |\n", r.Enqueued)
	fmt.Fprintf(w, "| schedule slots due | %d |\n", r.SlotsExpected)
	fmt.Fprintf(w, "| executions logged | %d |\n", r.Executions)
	fmt.Fprintf(w, "| distinct messages executed | %d |\n", r.Messages)
	fmt.Fprintf(w, "| lost: never replicated (acknowledged by a master a failover replaced, not on the new one) / every other loss | %d / %d |\n", r.LostNeverReplicated, r.Lost-r.LostNeverReplicated)
	fmt.Fprintf(w, "| %s: acknowledged messages looked for on the new master / not there (run or not) | %d / %d |\n", Sentinel, r.FailoverChecked, r.NeverReplicated)
	fmt.Fprintf(w, "| %s: messages and slots run at two positions, the first taken by the old master during the failover and absent from the new one, enqueued again there (at least once, allowed) | %d |\n", Sentinel, r.FailoverReenqueues)
	fmt.Fprintf(w, "| not run, still queued when the drain gave up | %d |\n", r.Unfinished)
	fmt.Fprintf(w, "| dead-lettered (the task never fails) | %d |\n", r.DeadLetters)
	fmt.Fprintf(w, "| overlapping executions of an ordered queue | %d |\n", r.OrderedOverlaps)
	fmt.Fprintf(w, "| overlaps of two workers on one queue, one a zombie (allowed) | %d |\n", r.ZombieOverlaps)
	fmt.Fprintf(w, "| overlaps of two workers on one queue, no fault | %d |\n", r.CrossWorkerOverlaps)
	fmt.Fprintf(w, "| overlaps with a task of a worker frozen under its task lease (%s, %s, %s) | %d |\n", WorkerStop, WorkerFreeze, HostFreeze, r.LeasedOverlaps)
	fmt.Fprintf(w, "| executions overlapping only while one was stopped with its whole host (never ran at once) | %d |\n", r.StoppedOverlaps)
	fmt.Fprintf(w, "| host-freeze thaw race (outside the invariant): overlaps of a task that finished within %s of the thaw / longest time both ran | %d / %s |\n", ThawRaceBound, r.ThawRaceOverlaps, r.MaxThawRace.Round(time.Microsecond))
	fmt.Fprintf(w, "| host-freeze: executions running at the thaw that finished before the lease killed them / longest run after the thaw | %d / %s |\n", r.SurvivedThaw, r.MaxRunAfterThaw.Round(time.Microsecond))
	fmt.Fprintf(w, "| tasks started by a worker resumed from SIGSTOP before it noticed its session was gone | %d |\n", r.ZombieStarts)
	fmt.Fprintf(w, "| ZooKeeper servers whose data tree diverged (\"digest mismatch\" in their log: claims of the queues they disagree on are refused there) / worker sessions that moved off a disagreeing server | %d / %d |\n", len(r.EnsembleDiverged), len(r.SessionMoves))
	fmt.Fprintf(w, "| duplicate executions, in flight at a fault (allowed) | %d%s |\n", r.Duplicates-r.DuplicatesOutside, dupAt())
	fmt.Fprintf(w, "| messages repeated outside any fault | %d |\n", r.DuplicatesOutside)
	fmt.Fprintf(w, "| runs of a message after its offset was committed (outside faults) | %d |\n", r.RanAfterCommit)
	fmt.Fprintf(w, "| messages enqueued twice (new position) | %d |\n", r.DoubleEnqueues)
	fmt.Fprintf(w, "| schedule slots fired twice | %d |\n", r.SlotsFiredTwice)
	fmt.Fprintf(w, "| schedule slots missed | %d |\n", r.SlotsMissed)
	fmt.Fprintf(w, "| committed offsets sampled / gone backwards | %d / %d |\n", r.OffsetSamples, r.OffsetRegressions)
	fmt.Fprintf(w, "| queues whose offset did not reach the end after the drain | %d |\n", r.QueuesBehind)
	fmt.Fprintf(w, "| parks of an ordered queue at a failed head / still parked at the end | %d / %d |\n", r.Parks, r.ParksUnresolved)
	fmt.Fprintf(w, "| longest finish-to-fault gap among excused duplicates | %s |\n", r.MaxCommitLag.Round(time.Millisecond))
	fmt.Fprintf(w, "| %s: the cut worker's queues moved to the others after (min / max) / cuts where they had not moved by the end | %s |\n", RedisCut, r.handOvers())
	fmt.Fprintf(w, "| %s: queues whose owner changed while no worker reached Redis | %d |\n", RedisCutAll, r.MovedWithoutRedis)
	fmt.Fprintf(w, "| runs that ended during their worker's graceful stop and ran again inside an injected fault, a session loss another, non-stopping worker shared, or an election of the ZooKeeper ensemble (excused) | %d |\n", r.GracefulRepeatsExcused)
	fmt.Fprintf(w, "| tasks killed outside any fault (a planned move's drain timeout ran out; measured, not yet an invariant) | %d |\n", r.KilledOutsideFaults)
	if kc := r.KeyChurn; kc != nil {
		fmt.Fprintf(w, "| %s: family keys fed / retirements seen / keys enqueued to again after one / bursts of new keys / retired at the end | %d / %d / %d / %d / %d |\n",
			KeyChurn, kc.Keys, kc.Retirements, kc.Returns, kc.Bursts, kc.RetiredAtEnd)
		fmt.Fprintf(w, "| %s: keys idle for ten retire_afters without retiring (fed again) | %d |\n", KeyChurn, kc.Stuck)
	}
	fmt.Fprintf(w, "\n| fault | injected | duplicates it excused |\n|---|---|---|\n")
	for _, k := range Kinds {
		fmt.Fprintf(w, "| %s | %d | %d |\n", k, r.Faults[k], r.DuplicatesAt[k])
	}
	for _, k := range Observed {
		fmt.Fprintf(w, "| %s (observed, not injected) | %d | %d |\n", k, r.Faults[k], r.DuplicatesAt[k])
	}
	fmt.Fprintf(w, "\n| freeze | freezes | lease fired | delay from the freeze's start to the firing: min / p50 / p90 / max |\n|---|---|---|---|\n")
	for _, k := range Freezes {
		ds := append([]time.Duration(nil), r.LeaseFireDelays[k]...)
		slices.Sort(ds)
		dist := "—"
		if len(ds) > 0 {
			q := func(p float64) time.Duration { return ds[int(p*float64(len(ds)-1)+0.5)].Round(time.Millisecond) }
			dist = fmt.Sprintf("%s / %s / %s / %s", q(0), q(0.5), q(0.9), q(1))
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s |\n", k, len(ds)+r.LeaseNoFire[k], len(ds), dist)
	}
	if len(r.EnsembleDiverged) > 0 {
		fmt.Fprintf(w, "\nZooKeeper servers whose data tree diverged:\n\n")
		for _, d := range r.EnsembleDiverged {
			fmt.Fprintf(w, "- %s\n", d)
		}
	}
	if len(r.SessionMoves) > 0 {
		fmt.Fprintf(w, "\nWorker sessions that found their ZooKeeper server disagreeing with the leader (up to %d):\n\n", maxDetails)
		for _, m := range r.SessionMoves[:min(len(r.SessionMoves), maxDetails)] {
			fmt.Fprintf(w, "- %s\n", m)
		}
	}
	if len(r.ZombieStartExamples) > 0 {
		fmt.Fprintf(w, "\nTasks started by resumed zombies (up to %d):\n\n", maxDetails)
		for _, z := range r.ZombieStartExamples {
			fmt.Fprintf(w, "- %s\n", z)
		}
	}
	if len(r.KilledOutsideFaultExamples) > 0 {
		fmt.Fprintf(w, "\nTasks killed outside any fault (up to %d):\n\n", maxDetails)
		for _, k := range r.KilledOutsideFaultExamples {
			fmt.Fprintf(w, "- %s\n", k)
		}
	}
	if !r.OK() {
		invs := make([]string, 0, len(r.ViolationCounts))
		for inv := range r.ViolationCounts {
			invs = append(invs, string(inv))
		}
		sort.Strings(invs)
		fmt.Fprintf(w, "\n| violated invariant | count |\n|---|---|\n")
		for _, inv := range invs {
			fmt.Fprintf(w, "| %s | %d |\n", inv, r.ViolationCounts[Invariant(inv)])
		}
		fmt.Fprintf(w, "\nExamples:\n\n")
		for _, v := range r.Violations {
			fmt.Fprintf(w, "- %s: %s\n", v.Invariant, v.Detail)
		}
	}
}
