package fleet

import (
	"maps"
	"time"

	"github.com/drover-dev/drover/coordinator"
)

// redisFlags follows the members' redis_unreachable flags for the rebalance
// leader and decides which members it treats as cut off from Redis.
//
// It acts on the flags only once they have settled: no member's flag set or
// cleared for a grace. One Redis outage is noticed by the members one after
// the other (within a ping interval or two of each other); acting on each
// flag as it matured handed the queues of the first members to notice to
// those about to, and when Redis came back, to the first to recover:
// every queue moved twice for an outage where nothing could run anyway
// (the chaos run's redis-cut-all, 41 of 55 queues moved). Until the flags
// settle the leader keeps its last decision, so membership and registry
// changes are still acted on. A member whose flag keeps changing cannot
// hold the decision back for more than maxUnsettled graces.
type redisFlags struct {
	grace          time.Duration
	answers        func() uint64 // the leader's own pings answered; nil: Redis counts as answering
	answersAt      uint64        // answers when flagged last changed
	flagged        map[string]bool
	changed        time.Time       // when flagged last changed; zero: never
	unsettledSince time.Time       // the first change not yet acted on; zero: settled
	acted          map[string]bool // the last decision
}

// maxUnsettled bounds, in graces, how long changing flags defer a decision.
const maxUnsettled = 4

func newRedisFlags(grace time.Duration, answers func() uint64) *redisFlags {
	return &redisFlags{grace: grace, answers: answers, flagged: map[string]bool{}, acted: map[string]bool{}}
}

// note records the flags of ms, read at now.
func (f *redisFlags) note(ms []coordinator.MemberNode, now time.Time) {
	flagged := map[string]bool{}
	for _, m := range ms {
		if m.Err == nil && m.Member.RedisUnreachable {
			flagged[m.Member.Name] = true
		}
	}
	if maps.Equal(flagged, f.flagged) {
		return
	}
	f.flagged, f.changed = flagged, now
	if f.answers != nil {
		f.answersAt = f.answers()
	}
	if f.unsettledSince.IsZero() {
		f.unsettledSince = now
	}
}

// decide returns the members to treat as cut off from Redis at now, and how
// long until it should be asked again (0 when the flags have settled: the
// decision is the flags).
func (f *redisFlags) decide(now time.Time) (map[string]bool, time.Duration) {
	if f.unsettledSince.IsZero() {
		return f.acted, 0
	}
	wait := f.changed.Add(f.grace).Sub(now)
	if limit := f.unsettledSince.Add(maxUnsettled * f.grace).Sub(now); limit < wait {
		wait = limit
	}
	if wait <= 0 && f.cutsOffMore() && f.answers != nil && f.answers() <= f.answersAt {
		// No answer since the flags changed: the outage may be the
		// leader's too, and a member may not have noticed it yet. Ask
		// again a grace later (the leader's next answer is the evidence).
		if hold := f.changed.Add(maxUnsettled * f.grace).Sub(now); hold > 0 {
			wait = min(hold, f.grace)
		}
	}
	if wait > 0 {
		return f.acted, wait
	}
	f.acted, f.unsettledSince = maps.Clone(f.flagged), time.Time{}
	return f.acted, 0
}

// cutsOffMore reports whether the flags name a member the last decision did
// not cut off.
func (f *redisFlags) cutsOffMore() bool {
	for m := range f.flagged {
		if !f.acted[m] {
			return true
		}
	}
	return false
}
