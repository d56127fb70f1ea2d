package check

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Check verifies the invariants of the package comment against in.
func Check(in Input) *Report {
	c := &checker{in: in, r: &Report{Faults: map[Kind]int{}, DuplicatesAt: map[Kind]int{}}}
	for _, f := range in.Faults {
		c.r.Faults[f.Kind]++
	}
	c.byMessage = map[msgKey][]Execution{}
	c.pending = map[msgKey]bool{}
	for _, p := range in.Pending {
		c.pending[msgKey{p.Queue, p.ID}] = true
	}
	var killed []Execution
	for _, e := range in.Executions {
		if e.Killed {
			killed = append(killed, e)
			continue
		}
		k := msgKey{e.Queue, e.ID}
		c.byMessage[k] = append(c.byMessage[k], e)
	}
	c.r.Executions = len(in.Executions) - len(killed)
	c.r.KeyChurn = in.KeyChurn
	c.r.Messages = len(c.byMessage)
	c.countUnprovoked()
	c.checkGracefulKills(killed)
	c.countKillsOutsideFaults(killed) // churn.go
	c.countZombieStarts()
	c.checkLost()
	c.checkDuplicates()
	c.checkRanAfterCommit()
	c.checkOverlaps()
	c.checkSchedules()
	c.checkOffsets()
	c.measureLease()
	c.checkParked()    // parked.go
	c.checkRedisCuts() // rediscut.go
	return c.r
}

type msgKey struct{ queue, id string }

type checker struct {
	in        Input
	r         *Report
	byMessage map[msgKey][]Execution
	pending   map[msgKey]bool
}

// covered returns the first fault that covers e (see the package comment).
func (c *checker) covered(e Execution) (*Fault, bool) {
	for i := range c.in.Faults {
		f := &c.in.Faults[i]
		eff := Effects[f.Kind]
		if !eff.Excuses || !f.hits(e.WorkerPID) {
			continue
		}
		if c.covers(f, e) {
			return f, true
		}
	}
	return nil, false
}

// covers reports whether e lies in f's window (see the package comment):
// it ended too recently before f to be committed, and started before its
// worker could learn that f cost it its session.
func (c *checker) covers(f *Fault, e Execution) bool {
	from := f.Start.Add(-c.in.Policy.CommitWindow)
	to := f.End.Add(time.Duration(Effects[f.Kind].After * float64(c.in.Policy.SessionTimeout)))
	return !e.End.Before(from) && !e.Start.After(to)
}

// stallExcuses reports whether e, which ended during its worker's
// graceful stop in restart, ended inside a loss of its worker's session
// that the stop did not cause: a drained task whose release the lost
// session could not write runs again, as after any session expiry. That
// is an injected fault that excuses repeats and hit e's worker, or a
// session loss of e's worker reported within a session timeout of a loss
// of another worker that was not in its own graceful stop (a ZooKeeper
// stall: two chaos runs on a loaded host lost every session during a
// drain), or an election of the ZooKeeper ensemble that no injected fault
// caused (its servers' logs say so; a stopping worker cannot cause one). A
// loss of the stopping worker alone is not enough: that is what a graceful
// stop that blocked its own session would look like.
func (c *checker) stallExcuses(e Execution, restart *Fault) bool {
	for i := range c.in.Faults {
		f := &c.in.Faults[i]
		if !Effects[f.Kind].Excuses || !f.hits(e.WorkerPID) || !c.covers(f, e) {
			continue
		}
		switch {
		case !slices.Contains(Observed, f.Kind), f.Kind == ZKElection:
			return true
		case f.Kind == SessionLost && c.sharedLoss(f, restart):
			return true
		}
	}
	return false
}

// sharedLoss reports whether another worker, not in its graceful stop of
// restart at the time, reported a session loss within a session timeout
// of the loss l.
func (c *checker) sharedLoss(l *Fault, restart *Fault) bool {
	if len(l.PIDs) != 1 {
		return false
	}
	for _, g := range c.in.Faults {
		if g.Kind != SessionLost || len(g.PIDs) != 1 || g.PIDs[0] == l.PIDs[0] {
			continue
		}
		if d := g.End.Sub(l.End); d > c.in.Policy.SessionTimeout || d < -c.in.Policy.SessionTimeout {
			continue
		}
		pid := g.PIDs[0]
		stopping := restart.hits(pid) && !g.End.Before(restart.Start) && !g.End.After(restart.End)
		if restart.StopAt != nil {
			at, ok := restart.StopAt[pid]
			stopping = ok && !g.End.Before(at) && !g.End.After(restart.End)
		}
		if !stopping {
			return true
		}
	}
	return false
}

// gracefulStop returns the rolling restart during whose graceful stop of
// e's worker (from its SIGTERM, Fault.StopAt, to the restart's end) e
// ended, if any: a graceful stop drains, so e must be the only run of its
// message and must not have been killed.
func (c *checker) gracefulStop(e Execution) *Fault {
	for i := range c.in.Faults {
		f := &c.in.Faults[i]
		if f.Kind != RollingRestart || !f.hits(e.WorkerPID) {
			continue
		}
		from := f.Start
		if f.StopAt != nil {
			at, ok := f.StopAt[e.WorkerPID]
			if !ok {
				continue // never signalled in this restart
			}
			from = at
		}
		if !e.End.Before(from) && !e.End.After(f.End) {
			return f
		}
	}
	return nil
}

// checkGracefulKills reports every task killed during a graceful stop.
func (c *checker) checkGracefulKills(killed []Execution) {
	for _, e := range killed {
		if f := c.gracefulStop(e); f != nil {
			c.r.violate(GracefulKill, "%s was killed during the %s of %s", describe(e), f.Kind, f.Start.Format("15:04:05.000"))
		}
	}
}

// countUnprovoked counts the observed session losses that no injected fault
// explains: none hit the worker between its start and its end plus its
// After.
func (c *checker) countUnprovoked() {
	for _, l := range c.in.Faults {
		if l.Kind != SessionLost {
			continue
		}
		explained := false
		for _, f := range c.in.Faults {
			eff := Effects[f.Kind]
			if (slices.Contains(Observed, f.Kind) && f.Kind != ZKElection) || !eff.Excuses || len(l.PIDs) != 1 || !f.hits(l.PIDs[0]) {
				continue
			}
			to := f.End.Add(time.Duration(eff.After * float64(c.in.Policy.SessionTimeout)))
			if !l.End.Before(f.Start) && !l.Start.After(to) {
				explained = true
				break
			}
		}
		if !explained {
			c.r.UnprovokedSessionLosses++
		}
	}
}

// execSlack is how much later than its dispatch a task's own start time may
// be (fork, exec and runtime start-up on a loaded machine).
const execSlack = 250 * time.Millisecond

// countZombieStarts counts the tasks a worker started after it was resumed
// from a WorkerStop (past its session timeout) and before it reported its
// session lost (plus execSlack: the task logs its start after the exec):
// work started by a zombie. A resume without a loss report within one
// session timeout is not counted (the window is unknown).
func (c *checker) countZombieStarts() {
	for _, f := range c.in.Faults {
		if !slices.Contains(Freezes, f.Kind) || len(f.PIDs) != 1 {
			continue
		}
		pid := f.PIDs[0]
		var noticed time.Time
		for _, l := range c.in.Faults {
			if l.Kind == SessionLost && len(l.PIDs) == 1 && l.PIDs[0] == pid && !l.End.Before(f.End) &&
				l.End.Before(f.End.Add(c.in.Policy.SessionTimeout)) && (noticed.IsZero() || l.End.Before(noticed)) {
				noticed = l.End
			}
		}
		if noticed.IsZero() {
			continue
		}
		report := noticed
		noticed = noticed.Add(execSlack)
		for _, e := range c.in.Executions {
			if e.WorkerPID == pid && !e.Start.Before(f.End) && e.Start.Before(noticed) {
				c.r.ZombieStarts++
				if c.r.ZombieStarts <= maxDetails {
					c.r.ZombieStartExamples = append(c.r.ZombieStartExamples, fmt.Sprintf("%s: started %s after SIGCONT; the worker reported its session lost %s after SIGCONT",
						describe(e), e.Start.Sub(f.End).Round(time.Millisecond), report.Sub(f.End).Round(time.Millisecond)))
				}
			}
		}
	}
}

// SlotOf reports whether id is a schedule slot's (sched:<name>:<unix>) and
// returns its parts.
func SlotOf(id string) (name string, slot int64, ok bool) {
	rest, ok := strings.CutPrefix(id, "sched:")
	if !ok {
		return "", 0, false
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return "", 0, false
	}
	slot, err := strconv.ParseInt(rest[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return rest[:i], slot, true
}

func describe(e Execution) string {
	return fmt.Sprintf("%s/%s (attempt %d, position %d) on worker pid %d, %s–%s",
		e.Queue, e.ID, e.Attempt, e.Position, e.WorkerPID,
		e.Start.Format("15:04:05.000000"), e.End.Format("15:04:05.000000"))
}

// checkLost: every confirmed enqueue ran. (Schedule slots: checkSchedules.)
func (c *checker) checkLost() {
	dead := map[msgKey]string{}
	for _, d := range c.in.DeadLetters {
		dead[msgKey{d.Queue, d.ID}] = d.Reason
	}
	c.r.DeadLetters = len(c.in.DeadLetters)
	notReplicated := map[msgKey]bool{}
	for _, f := range c.in.Faults {
		c.r.FailoverChecked += f.Checked
		for _, qid := range f.NotReplicated {
			q, id, _ := strings.Cut(qid, "/")
			k := msgKey{q, id}
			if notReplicated[k] {
				continue
			}
			notReplicated[k] = true
			c.r.NeverReplicated++
			ran := ""
			if len(c.byMessage[k]) > 0 {
				ran = "; it ran before the failover"
			}
			c.r.violate(NeverReplicated, "%s/%s was acknowledged by the old master and is not on the new one (%s at %s)%s", q, id, f.Kind, f.Start.Format("15:04:05.000"), ran)
		}
	}
	seen := map[msgKey]bool{}
	for _, m := range c.in.Enqueued {
		k := msgKey{m.Queue, m.ID}
		if seen[k] {
			continue
		}
		seen[k] = true
		c.r.Enqueued++
		if len(c.byMessage[k]) == 0 {
			if c.pending[k] {
				c.r.Unfinished++
				c.r.violate(DrainIncomplete, "%s/%s (position %d) never ran and is still queued", m.Queue, m.ID, m.Position)
				continue
			}
			c.r.Lost++
			if notReplicated[k] { // reported as never replicated
				c.r.LostNeverReplicated++
				continue
			}
			why := ""
			if r, ok := dead[k]; ok {
				why = "; it is in the dead letters: " + r
			}
			c.r.violate(Lost, "%s/%s (position %d) was enqueued and never ran%s", m.Queue, m.ID, m.Position, why)
		}
	}
}

// checkDuplicates: a message that ran n times needs n−1 covered executions;
// one id at two positions within an attempt was enqueued twice.
func (c *checker) checkDuplicates() {
	for k, es := range c.byMessage {
		if c.failoverReenqueue(es) {
			continue
		}
		if len(es) > 1 {
			c.duplicate(k, es)
		}
		if _, _, slot := SlotOf(k.id); slot {
			continue // checkSchedules reports a slot fired twice
		}
		if p, ok := twoPositions(es); ok {
			c.r.DoubleEnqueues++
			c.r.violate(DoubleEnqueue, "%s/%s ran at positions %d and %d", k.queue, k.id, p[0], p[1])
		}
	}
}

func (c *checker) duplicate(k msgKey, es []Execution) {
	sort.Slice(es, func(i, j int) bool { return es[i].Start.Before(es[j].Start) })
	c.r.Duplicates += len(es) - 1
	for _, e := range es[:len(es)-1] {
		f := c.gracefulStop(e)
		if f == nil {
			continue
		}
		if !c.stallExcuses(e, f) {
			c.r.violate(GracefulRepeat, "%s/%s ran %d times; the run %s ended during the %s of %s",
				k.queue, k.id, len(es), describe(e), f.Kind, f.Start.Format("15:04:05.000"))
			return
		}
		c.r.GracefulRepeatsExcused++
	}
	var (
		cover     *Fault
		uncovered []Execution
	)
	for _, e := range es {
		f, ok := c.covered(e)
		if !ok {
			uncovered = append(uncovered, e)
			continue
		}
		if cover == nil {
			cover = f
		}
		if lag := f.Start.Sub(e.End); lag > c.r.MaxCommitLag {
			c.r.MaxCommitLag = lag
		}
	}
	if len(uncovered) <= 1 {
		c.r.DuplicatesAt[cover.Kind] += len(es) - 1
		return
	}
	c.r.DuplicatesOutside++
	var ds []string
	for _, e := range uncovered {
		ds = append(ds, describe(e))
	}
	c.r.violate(DuplicateOutside, "%s/%s ran %d times, %d of them outside any fault window: %s",
		k.queue, k.id, len(es), len(uncovered), strings.Join(ds, "; "))
}

// failoverReenqueue reports (and counts) a message that ran at two
// positions across a Sentinel failover, the first assigned by the old
// master during the fault: a write the old master took after the replica
// was promoted (or just before it died), which workers ran from it and
// which was enqueued again on the new master, where the first copy's
// dedupe record never arrived — by a producer told "outcome unknown"
// (durable mode), or by a scheduler whose own state the failover lost
// (durable mode off). At least once, not a violation: measured
// (Report.FailoverReenqueues). Positions are Redis TIME in µs.
func (c *checker) failoverReenqueue(es []Execution) bool {
	var ps []int64
	for _, e := range es {
		if !slices.Contains(ps, e.Position) {
			ps = append(ps, e.Position)
		}
	}
	if len(ps) < 2 {
		return false
	}
	if _, _, slot := SlotOf(es[0].ID); slot {
		return false // checkSchedules counts slots
	}
	return c.reenqueuedAcross(ps)
}

// reenqueuedAcross reports whether positions ps (two or more) straddle a
// Sentinel fault or an observed failover, the first assigned during it,
// and counts it.
func (c *checker) reenqueuedAcross(ps []int64) bool {
	slices.Sort(ps)
	first, last := time.UnixMicro(ps[0]), time.UnixMicro(ps[len(ps)-1])
	for _, f := range c.in.Faults {
		if (f.Kind == Sentinel || f.Kind == Failover) && !first.Before(f.Start.Add(-time.Second)) && !first.After(f.End) && !last.Before(f.Start) {
			c.r.FailoverReenqueues++
			return true
		}
	}
	return false
}

// checkRanAfterCommit: an execution that no fault covers never starts after
// a sample showed its message's position committed (the offset covers only
// finished messages, so such a run repeats committed work).
func (c *checker) checkRanAfterCommit() {
	type mark struct {
		at  time.Time
		max int64 // highest position sampled at or before at
	}
	marks := map[string][]mark{}
	byQueue := map[string][]OffsetSample{}
	for _, s := range c.in.Offsets {
		byQueue[s.Queue] = append(byQueue[s.Queue], s)
	}
	for q, ss := range byQueue {
		sort.Slice(ss, func(i, j int) bool { return ss[i].At.Before(ss[j].At) })
		var m int64
		for _, s := range ss {
			m = max(m, s.Position)
			marks[q] = append(marks[q], mark{s.At, m})
		}
	}
	for _, e := range c.in.Executions {
		ms := marks[e.Queue]
		// the last sample taken before e started
		i := sort.Search(len(ms), func(i int) bool { return !ms[i].at.Before(e.Start) }) - 1
		if i < 0 || ms[i].max < e.Position {
			continue
		}
		if _, ok := c.covered(e); ok {
			continue
		}
		c.r.RanAfterCommit++
		c.r.violate(RanAfterCommit, "%s started after the offset of %s was read at %d (%s)", describe(e), e.Queue, ms[i].max, ms[i].at.Format("15:04:05.000000"))
	}
}

// twoPositions returns two distinct positions of one attempt, if any.
func twoPositions(es []Execution) ([2]int64, bool) {
	first := map[int]int64{}
	for _, e := range es {
		p, ok := first[e.Attempt]
		if !ok {
			first[e.Attempt] = e.Position
			continue
		}
		if p != e.Position {
			return [2]int64{p, e.Position}, true
		}
	}
	return [2]int64{}, false
}

// checkOverlaps sweeps each queue's executions in start order.
func (c *checker) checkOverlaps() {
	byQueue := map[string][]Execution{}
	for _, e := range c.in.Executions {
		byQueue[e.Queue] = append(byQueue[e.Queue], e)
	}
	for q, es := range byQueue {
		sort.Slice(es, func(i, j int) bool { return es[i].Start.Before(es[j].Start) })
		var active []Execution
		for _, b := range es {
			kept := active[:0]
			for _, a := range active {
				if a.End.After(b.Start) {
					kept = append(kept, a)
				}
			}
			active = kept
			for _, a := range active {
				c.overlap(q, a, b)
			}
			active = append(active, b)
		}
	}
}

// overlap judges executions a and b of queue q, a started first and had
// not ended when b started.
func (c *checker) overlap(q string, a, b Execution) {
	from, to := b.Start, minTime(a.End, b.End)
	if c.stoppedDuring(a, from, to) || c.stoppedDuring(b, from, to) {
		// One of them was stopped (SIGSTOP of its group) the whole time
		// they overlapped: they never ran at once.
		c.r.StoppedOverlaps++
		return
	}
	if d, ok := c.thawRace(a, b); ok {
		c.r.ThawRaceOverlaps++
		c.r.MaxThawRace = max(c.r.MaxThawRace, d)
		return
	}
	if c.in.Ordered[q] {
		c.r.OrderedOverlaps++
		c.r.violate(OrderedOverlap, "ordered queue %s: %s overlaps %s", q, describe(a), describe(b))
		return
	}
	if a.WorkerPID == b.WorkerPID {
		return // one owner running tasks concurrently
	}
	fa, za := c.covered(a)
	fb, zb := c.covered(b)
	leased := (za && Effects[fa.Kind].Leased) || (zb && Effects[fb.Kind].Leased)
	if (za || zb) && !leased {
		c.r.ZombieOverlaps++
		return
	}
	if leased {
		c.r.LeasedOverlaps++
		c.r.violate(LeasedOverlap, "queue %s: %s overlaps %s although the frozen worker's task lease should have killed it", q, describe(a), describe(b))
		return
	}
	c.r.CrossWorkerOverlaps++
	c.r.violate(CrossWorkerOverlap, "queue %s: %s overlaps %s and neither worker was under a fault", q, describe(a), describe(b))
}

// stoppedDuring reports whether a fault that stopped e's worker and its
// tasks (HostFreeze) spans [from, to].
func (c *checker) stoppedDuring(e Execution, from, to time.Time) bool {
	for _, f := range c.in.Faults {
		if Effects[f.Kind].Stopped && f.hits(e.WorkerPID) && !from.Before(f.Start) && !to.After(f.End) {
			return true
		}
	}
	return false
}

// ThawRaceBound is how long a task stopped with its whole host may run on
// after the thaw before its lease kills it and still count as the thaw race
// the invariant leaves open (docs/semantics.md), rather than a violation.
const ThawRaceBound = time.Second

// thawRace reports whether a and b overlap only because one of them was
// running on a host that froze past the session timeout (HostFreeze) and
// finished within ThawRaceBound of the thaw: the supervisor, thawed with
// it, had not killed it yet. It returns how long they ran at once.
func (c *checker) thawRace(a, b Execution) (time.Duration, bool) {
	for _, pair := range [2][2]Execution{{a, b}, {b, a}} {
		x, other := pair[0], pair[1]
		for _, f := range c.in.Faults {
			if f.Kind != HostFreeze || !f.hits(x.WorkerPID) || !x.Start.Before(f.Start) || !x.End.After(f.End) {
				continue
			}
			if x.End.Sub(f.End) > ThawRaceBound {
				continue
			}
			from, to := f.End, minTime(x.End, other.End)
			if other.Start.After(from) {
				from = other.Start
			}
			return max(to.Sub(from), 0), true
		}
	}
	return 0, false
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// measureLease reports, for every freeze, how long after its start the
// frozen worker's task lease fired, and for every HostFreeze the
// executions that were still running at the thaw and finished on their own
// (the supervisor, thawed with them, did not kill them first).
func (c *checker) measureLease() {
	c.r.LeaseFireDelays = map[Kind][]time.Duration{}
	c.r.LeaseNoFire = map[Kind]int{}
	for _, f := range c.in.Faults {
		if !slices.Contains(Freezes, f.Kind) || len(f.PIDs) != 1 {
			continue
		}
		fired := false
		for _, lf := range c.in.LeaseFires {
			if lf.WorkerPID == f.PIDs[0] && !lf.At.Before(f.Start) && !lf.At.After(f.End.Add(c.in.Policy.SessionTimeout)) {
				c.r.LeaseFireDelays[f.Kind] = append(c.r.LeaseFireDelays[f.Kind], lf.At.Sub(f.Start))
				fired = true
				break
			}
		}
		if !fired {
			c.r.LeaseNoFire[f.Kind]++
		}
		if f.Kind != HostFreeze {
			continue
		}
		for _, e := range c.in.Executions {
			if e.WorkerPID == f.PIDs[0] && e.Start.Before(f.Start) && e.End.After(f.End) {
				c.r.SurvivedThaw++
				c.r.MaxRunAfterThaw = max(c.r.MaxRunAfterThaw, e.End.Sub(f.End))
			}
		}
	}
}

// checkSchedules: every slot from an entry's first fired one up to its next
// pending one fired, once.
func (c *checker) checkSchedules() {
	// name → slot → the positions its executions had: one message per
	// slot, whatever its attempt. (A first attempt cut short by a fault
	// logs nothing, and its next start is attempt 1: attempts are counted
	// in Redis, across owners.) Two positions are two fires.
	fired := map[string]map[int64]map[int64]bool{}
	for _, e := range c.in.Executions {
		name, slot, ok := SlotOf(e.ID)
		if !ok {
			continue
		}
		if fired[name] == nil {
			fired[name] = map[int64]map[int64]bool{}
		}
		if fired[name][slot] == nil {
			fired[name][slot] = map[int64]bool{}
		}
		fired[name][slot][e.Position] = true
	}
	for _, s := range c.in.Schedules {
		slots := fired[s.Name]
		if len(slots) == 0 {
			c.r.SlotsMissed++
			c.r.violate(SlotMissed, "schedule %s never fired (next slot %s)", s.Name, s.Next.Format(time.RFC3339))
			continue
		}
		first, last := int64(1<<62), int64(0)
		for t := range slots {
			first, last = min(first, t), max(last, t)
		}
		step := int64(s.Every / time.Second)
		if step < 1 {
			step = 1
		}
		end := last + step
		if !s.Next.IsZero() {
			end = s.Next.Unix()
		}
		for t := first; t < end; t += step {
			c.r.SlotsExpected++
			if len(slots[t]) == 0 {
				if id := "sched:" + s.Name + ":" + strconv.FormatInt(t, 10); c.pending[msgKey{s.Queue, id}] {
					c.r.Unfinished++
					c.r.violate(DrainIncomplete, "%s/%s fired, never ran and is still queued", s.Queue, id)
					continue
				}
				c.r.SlotsMissed++
				c.r.violate(SlotMissed, "schedule %s: slot %s (id %s) never ran; its first fired slot was %s, its next pending one %s",
					s.Name, time.Unix(t, 0).Format("15:04:05"), "sched:"+s.Name+":"+strconv.FormatInt(t, 10),
					time.Unix(first, 0).Format("15:04:05"), time.Unix(end, 0).Format("15:04:05"))
			}
		}
		for t, ps := range slots {
			if len(ps) > 1 && c.reenqueuedAcross(slices.Collect(maps.Keys(ps))) {
				continue
			}
			if len(ps) > 1 {
				c.r.SlotsFiredTwice++
				c.r.violate(SlotFiredTwice, "schedule %s: slot %s was enqueued at %d positions", s.Name, time.Unix(t, 0).Format("15:04:05"), len(ps))
			}
		}
	}
}

// checkOffsets: samples of one queue ordered by version never decrease,
// and after the drain each offset covers its queue.
func (c *checker) checkOffsets() {
	byQueue := map[string][]OffsetSample{}
	for _, s := range c.in.Offsets {
		byQueue[s.Queue] = append(byQueue[s.Queue], s)
	}
	c.r.OffsetSamples = len(c.in.Offsets)
	for q, ss := range byQueue {
		sort.SliceStable(ss, func(i, j int) bool {
			if ss[i].Version != ss[j].Version {
				return ss[i].Version < ss[j].Version
			}
			return ss[i].At.Before(ss[j].At)
		})
		for i := 1; i < len(ss); i++ {
			a, b := ss[i-1], ss[i]
			if b.Position < a.Position || (a.Version == b.Version && a.Position != b.Position) {
				c.r.OffsetRegressions++
				c.r.violate(OffsetBackwards, "queue %s: offset %d (version %d, by %s, read %s) then %d (version %d, by %s, read %s)",
					q, a.Position, a.Version, a.Member, a.At.Format("15:04:05.000"), b.Position, b.Version, b.Member, b.At.Format("15:04:05.000"))
			}
		}
	}
	if c.in.FinalOffsets == nil {
		return
	}
	last := map[string]int64{}
	for _, m := range c.in.Enqueued {
		last[m.Queue] = max(last[m.Queue], m.Position)
	}
	for _, e := range c.in.Executions {
		last[e.Queue] = max(last[e.Queue], e.Position)
	}
	qs := make([]string, 0, len(last))
	for q := range last {
		qs = append(qs, q)
	}
	sort.Strings(qs)
	for _, q := range qs {
		if c.retiredQueue(q) {
			continue
		}
		if off := c.in.FinalOffsets[q]; off < last[q] {
			c.r.QueuesBehind++
			c.r.violate(OffsetBehind, "queue %s: committed offset %d after the drain, last message at %d", q, off, last[q])
		}
	}
}
