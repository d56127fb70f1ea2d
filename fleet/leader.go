package fleet

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/rebalance"
)

// DefaultSettle is RebalancerConfig.Settle's default.
const DefaultSettle = 250 * time.Millisecond

// placeSettle is the settle window when only the registry changed: new
// queues are placed beside the assignment (placement.go), not rebalanced,
// so there is no burst of rebalances to fold into one; the window only
// gathers what the registry watch delivers together.
const placeSettle = 25 * time.Millisecond

// DefaultRedisGrace is RebalancerConfig.RedisGrace's default: three ping
// intervals of a member probing at the default give-up bound (see
// RedisHealth.Grace).
const DefaultRedisGrace = 3 * DefaultRedisGiveUpAfter / 5

// RebalancerConfig configures RunRebalancer. Zero values mean the documented
// defaults.
type RebalancerConfig struct {
	// Session is the member's coordination session. Required.
	Session LeaderSession
	// Elector is the rebalance election of that session. Required.
	Elector Elector
	// Candidate is this member's name in the election and in the assignment's
	// leader field. Required.
	Candidate string
	// Strategy computes assignments. Default: rebalance.Sticky.
	Strategy rebalance.Strategy
	// Settle is how long membership and the queue registry must be quiet
	// before a new target is computed, so that a burst (a rolling deploy)
	// costs one rebalance. A storm of changes never delays a target by more
	// than 4 × Settle. Default 250ms.
	Settle time.Duration
	// RedisGrace is how long a member must have published
	// redis_unreachable before the leader acts on it, so that when Redis
	// itself goes down the members that notice first do not hand their
	// queues to members about to notice too (no churn). Default
	// DefaultRedisGrace.
	RedisGrace time.Duration
	// OwnRedis, if set, is the leader's own member's view of Redis (its
	// *RedisHealth). A member that cannot reach Redis does not lead: it
	// could not tell idle queues from busy ones, retire a family's keys,
	// or know whether another member's flag is its own outage too. It
	// resigns when its Redis stops answering and campaigns again once it
	// answers. And a leader cuts a member off only once its own Redis has
	// answered since the flags changed, or once they have stood for four
	// graces (redis_flags.go). Nil: the leader takes Redis as answering.
	OwnRedis OwnRedis
	// BalanceEvery paces the corrections of balance after removals: when
	// queues taken out without computing leave a member outside Sticky's
	// balance bound, the leader moves idle queues to restore it, at most
	// once per BalanceEvery (balance.go). Default DefaultBalanceEvery
	// (10s).
	BalanceEvery time.Duration
	// Activity, if set, tells which queues have nothing running and no
	// backlog: a correction moves only those. Nil: a correction moves
	// queues in an order seeded by the generation, busy or not.
	Activity Activity
	// OnRebalance, if set, is called after each assignment written by a
	// whole computation or for a change of members (placement.go's
	// placeMembers), with the number of queues that moved and how long
	// the computation took.
	OnRebalance func(a drover.Assignment, moved int, compute time.Duration)
	// OnRemoved, if set, is called with the number of queues each write
	// took out of the assignment without computing it.
	OnRemoved func(n int)
	// OnCorrection, if set, is called after each correction of balance
	// written, with the number of queues it moved.
	OnCorrection func(moved int)
	// OnLeading, if set, is called with true when a leadership term starts
	// and false when it ends.
	OnLeading func(leading bool)
	// Registrar, if set, runs beside every leadership term and is handed
	// each registry snapshot the term reads: it registers and retires the
	// queues of queue families (package registrar).
	Registrar FamilyRegistrar
	// CampaignRetry is the pause after a failed campaign. Default
	// DefaultCampaignRetry.
	CampaignRetry time.Duration
	// Clock runs the settle window and measures the Redis grace. Default
	// drover.SystemClock.
	Clock  drover.TimerClock
	Logger hclog.Logger
}

// OwnRedis is what the rebalance leader knows of its own member's Redis:
// a *RedisHealth.
type OwnRedis interface {
	// State reports whether Redis is unreachable now, and a channel
	// closed at the next change.
	State() (unreachable bool, changed <-chan struct{})
	// Answers counts the pings Redis has answered.
	Answers() uint64
	// Quiet reports whether Redis has left the last two pings unanswered
	// (or is unreachable): an outage the member has not given up on yet.
	Quiet() bool
}

// RunRebalancer campaigns in the rebalance election and, while leading,
// keeps /assignment equal to the strategy's target for the live members and
// the registered queues (DESIGN.md §5 step 1). It returns when ctx ends or
// the session is lost (an error wrapping drover.ErrSessionLost); a lost
// leadership (deposed, fenced) sends it back to campaigning.
func RunRebalancer(ctx context.Context, cfg RebalancerConfig) error {
	if cfg.Session == nil || cfg.Elector == nil || cfg.Candidate == "" {
		return fmt.Errorf("rebalancer: %w: Session, Elector and Candidate are required", drover.ErrInvalidConfig)
	}
	if cfg.Strategy == nil {
		cfg.Strategy = rebalance.Sticky{}
	}
	if cfg.Settle <= 0 {
		cfg.Settle = DefaultSettle
	}
	if cfg.RedisGrace <= 0 {
		cfg.RedisGrace = DefaultRedisGrace
	}
	if cfg.BalanceEvery <= 0 {
		cfg.BalanceEvery = DefaultBalanceEvery
	}
	if cfg.Clock == nil {
		cfg.Clock = drover.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	log := cfg.Logger.With("election", coordinator.ElectionRebalance)
	s := cfg.Session
	terms := &Candidacy{Elector: cfg.Elector, Candidate: cfg.Candidate, Session: s, Retry: cfg.CampaignRetry, Logger: log}
	for {
		if !waitForRedis(ctx, s, cfg.OwnRedis) {
			return firstErr(ctx.Err(), s.Err())
		}
		lead, err := terms.Next(ctx)
		if err != nil {
			return err
		}
		if cfg.OwnRedis != nil {
			if unreachable, _ := cfg.OwnRedis.State(); unreachable {
				// Won while Redis went silent (an outage every member
				// notices in turn): hand the term on at once.
				resign(lead, log)
				continue
			}
		}
		if cfg.OnLeading != nil {
			cfg.OnLeading(true)
		}
		tctx, endTerm := whileRedisAnswers(ctx, cfg.OwnRedis)
		err = runLeaderTerm(tctx, s, lead, cfg, log)
		if cause := context.Cause(tctx); errors.Is(cause, errRedisUnreachable) {
			err = cause
		}
		endTerm()
		if cfg.OnLeading != nil {
			cfg.OnLeading(false)
		}
		resign(lead, log)
		if end := firstErr(ctx.Err(), s.Err()); end != nil {
			return end
		}
		log.Warn("stepped down as rebalance leader", "error", err)
	}
}

// resign ends a term. A candidate node it cannot delete (the session
// suspended) stays until the session ends or this member's next campaign
// finds it ahead of its new one and removes it (coordinator.Election).
func resign(lead Leadership, log hclog.Logger) {
	if err := lead.Resign(context.Background()); err != nil {
		log.Warn("resign: the candidate node stays until the next campaign removes it", "error", err)
	}
}

// errRedisUnreachable ends a leadership term whose member cannot reach
// Redis (RebalancerConfig.OwnRedis).
var errRedisUnreachable = errors.New("this member cannot reach Redis; a member that can leads")

// waitForRedis returns true once own reports Redis answering (at once
// when own is nil), false when ctx ends or the session is lost first.
func waitForRedis(ctx context.Context, s Lifetime, own OwnRedis) bool {
	if own == nil {
		return true
	}
	for {
		unreachable, changed := own.State()
		if !unreachable {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		case <-s.Done():
			return false
		}
	}
}

// whileRedisAnswers returns a context for one leadership term, cancelled
// with errRedisUnreachable when own reports Redis unreachable (at once if
// it already does); end releases it.
func whileRedisAnswers(ctx context.Context, own OwnRedis) (context.Context, func()) {
	tctx, cancel := context.WithCancelCause(ctx)
	if own == nil {
		return tctx, func() { cancel(nil) }
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			unreachable, changed := own.State()
			if unreachable {
				cancel(errRedisUnreachable)
				return
			}
			select {
			case <-changed:
			case <-tctx.Done():
				return
			}
		}
	}()
	return tctx, func() { cancel(nil); <-done }
}

// quiet reports whether the leader's own Redis is quiet (OwnRedis.Quiet);
// never without an OwnRedis.
func quiet(own OwnRedis) bool { return own != nil && own.Quiet() }

// quietRetry is when a leader holding for its quiet Redis looks again: a
// ping interval (a third of the grace).
func quietRetry(cfg RebalancerConfig) time.Duration { return cfg.RedisGrace / 3 }

// answersOf is own's count of answered pings, for redisFlags: nil (Redis
// counts as answering) when own is nil.
func answersOf(own OwnRedis) func() uint64 {
	if own == nil {
		return nil
	}
	return own.Answers
}

// runLeaderTerm runs one leadership term.
func runLeaderTerm(ctx context.Context, s LeaderSession, lead Leadership, cfg RebalancerConfig, log hclog.Logger) error {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-lead.Done():
			cancel()
		case <-lctx.Done():
		}
	}()
	w, err := s.NewAssignmentWriter(lctx, lead)
	if err != nil {
		return err
	}
	log.Info("leading rebalance", "epoch", w.Epoch(), "generation", w.Current().Generation)
	members := s.WatchMembers(lctx)
	queues := s.WatchRegistry(lctx)
	if r := cfg.Registrar; r != nil {
		registered := make(chan struct{})
		go func() {
			defer close(registered)
			if err := r.Run(lctx); err != nil && lctx.Err() == nil {
				log.Warn("family registrar stopped", "error", err)
			}
		}()
		defer func() { cancel(); <-registered }()
	}
	var (
		curMembers []coordinator.MemberNode
		curQueues  coordinator.Registry
		haveM      bool
		haveQ      bool
		firstDirty time.Time
		// membership changed since the last target: settle for Settle
		membersDirty bool
		// the members' redis_unreachable flags, acted on once settled
		flags = newRedisFlags(cfg.RedisGrace, answersOf(cfg.OwnRedis))
		// what new queues are placed by, between whole computations
		place = placement{onRemoved: cfg.OnRemoved}
		// the members that could not reach Redis at the last target
		cutOff map[string]bool
		// the registrar's notice of queues it created
		created <-chan struct{}
	)
	if cfg.Registrar != nil {
		created = cfg.Registrar.Created()
	}
	clock := cfg.Clock
	settle := clock.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	// The correction of balance after removals: due no sooner than
	// BalanceEvery after the previous one (the term's start before one).
	balance := clock.NewTimer(time.Hour)
	balance.Stop()
	defer balance.Stop()
	lastCorrection, balanceArmed := clock.Now(), false
	// The removals waiting while new queues are placed (removals.go): a
	// settle when they are due, should nothing else come.
	removals := clock.NewTimer(time.Hour)
	removals.Stop()
	defer removals.Stop()
	armRemovals := func() {
		if at, ok := place.removalsDue(); ok {
			removals.Reset(max(at.Sub(clock.Now()), 0))
		}
	}
	checkBalance := func() {
		if balanceArmed || place.balanced() {
			return
		}
		balanceArmed = true
		balance.Reset(max(lastCorrection.Add(cfg.BalanceEvery).Sub(clock.Now()), 0))
	}
	dirty := func() {
		now := clock.Now()
		if firstDirty.IsZero() {
			firstDirty = now
		}
		// Debounce, but never past 4 × the window from the first change.
		window := min(cfg.Settle, placeSettle)
		if membersDirty {
			window = cfg.Settle
		}
		wait := window
		if limit := firstDirty.Add(4 * window).Sub(now); limit < wait {
			wait = max(limit, 0)
		}
		settle.Reset(wait)
	}
	noteMembers := func(ms []coordinator.MemberNode) {
		curMembers, haveM = ms, true
		flags.note(ms, clock.Now())
		membersDirty = true
	}
	for {
		select {
		case ms, ok := <-members:
			if !ok {
				return firstErr(lead.Err(), ctx.Err(), s.Err(), errors.New("member watch ended"))
			}
			noteMembers(ms)
			dirty()
		case qs, ok := <-queues:
			if !ok {
				return firstErr(lead.Err(), ctx.Err(), s.Err(), errors.New("queue watch ended"))
			}
			for _, err := range qs.Errs {
				log.Warn("a registry bucket is corrupt; its queues are balanced as last read", "error", err)
			}
			curQueues, haveQ = qs, true
			if cfg.Registrar != nil {
				cfg.Registrar.Observe(qs)
			}
			dirty()
		case <-settle.C():
			// A member update that came while the leader was busy (a slow
			// write, a correction waiting on Redis) is read before acting:
			// with both ready, select may pick the timer, and the leader
			// would act on flags older than a member's own. In a chaos run
			// every worker lost Redis and 39 of 56 queues went to the one
			// whose flag was still waiting here. An update taken here then
			// waits out its settle window, as it would have had select
			// taken it first: a join acted on at once skipped the window
			// that gathers a rolling start's members into one move.
			drained := false
			for pending := true; pending; {
				select {
				case ms, ok := <-members:
					if !ok {
						return firstErr(lead.Err(), ctx.Err(), s.Err(), errors.New("member watch ended"))
					}
					noteMembers(ms)
					drained = true
				default:
					pending = false
				}
			}
			if drained {
				dirty()
				continue
			}
			if !haveM || !haveQ {
				firstDirty, membersDirty = time.Time{}, false
				continue
			}
			if quiet(cfg.OwnRedis) {
				// This leader's own Redis has not answered lately: an
				// outage its member has not given up on yet, perhaps every
				// member's. Nothing moves until Redis answers, or the term
				// ends at the give-up. A chaos run's leader, elected 0.4 s
				// before its own give-up, moved 2 of 45 queues while no
				// worker reached Redis.
				settle.Reset(quietRetry(cfg))
				continue
			}
			firstDirty, membersDirty = time.Time{}, false
			var wait time.Duration
			cutOff, wait = flags.decide(clock.Now())
			if wait > 0 {
				settle.Reset(wait) // act on the flags once they have settled
			}
			live, cutOffNames := liveMembers(curMembers, cutOff)
			placed, err := place.placeNew(lctx, clock.Now(), lead, w, live, curQueues, log)
			armRemovals()
			if placed {
				if err != nil {
					log.Warn("placing new queues failed; retrying after the settle window", "error", err)
					if errors.Is(err, drover.ErrFenced) || errors.Is(err, drover.ErrNotLeader) || errors.Is(err, drover.ErrSessionLost) {
						return err
					}
					dirty()
				}
				checkBalance()
				continue
			}
			placed, err = place.placeMembers(lctx, lead, w, cfg, live, cutOffNames, curQueues, log)
			if placed {
				if err != nil {
					if errors.Is(err, drover.ErrFenced) || errors.Is(err, drover.ErrNotLeader) || errors.Is(err, drover.ErrSessionLost) {
						return err
					}
					log.Warn("moving queues for a change of members failed; retrying after the settle window", "error", err)
					dirty()
				}
				checkBalance()
				continue
			}
			if err := writeTarget(lctx, lead, w, cfg, live, cutOffNames, curQueues, &place, log); err != nil {
				if errors.Is(err, drover.ErrFenced) || errors.Is(err, drover.ErrNotLeader) || errors.Is(err, drover.ErrSessionLost) {
					return err
				}
				log.Warn("write assignment failed; retrying after the settle window", "error", err)
				dirty()
			}
		case <-balance.C():
			if quiet(cfg.OwnRedis) {
				balance.Reset(quietRetry(cfg)) // as the settle above
				continue
			}
			balanceArmed = false
			live, _ := liveMembers(curMembers, cutOff)
			if place.placer == nil || membersKey(live) != place.members || place.balanced() {
				continue // balanced, or a whole computation is due
			}
			lastCorrection = clock.Now()
			if err := place.flushRemovals(lctx, clock.Now(), lead, w, log); err != nil {
				if errors.Is(err, drover.ErrFenced) || errors.Is(err, drover.ErrNotLeader) || errors.Is(err, drover.ErrSessionLost) {
					return err
				}
				log.Warn("writing the removals before a correction failed; a whole computation follows", "error", err)
				dirty()
				checkBalance()
				continue
			}
			moved, err := place.correct(lctx, lead, w, cfg, live, log)
			if err != nil {
				if errors.Is(err, drover.ErrFenced) || errors.Is(err, drover.ErrNotLeader) || errors.Is(err, drover.ErrSessionLost) {
					return err
				}
				log.Warn("correcting balance failed; retrying after the pacing interval", "error", err)
				if place.placer == nil {
					dirty() // the write failed: a whole computation
				}
			}
			if moved > 0 && cfg.OnCorrection != nil {
				cfg.OnCorrection(moved)
			}
			checkBalance()
		case <-removals.C():
			dirty() // the settle writes the removals now due
		case <-created:
			cfgs := cfg.Registrar.TakeCreated()
			if !haveM || !haveQ {
				continue // the registry watch will list them
			}
			live, _ := liveMembers(curMembers, cutOff)
			if err := place.placeCreated(lctx, clock.Now(), lead, w, live, curQueues, cfgs, log); err != nil {
				if errors.Is(err, drover.ErrFenced) || errors.Is(err, drover.ErrNotLeader) || errors.Is(err, drover.ErrSessionLost) {
					return err
				}
				log.Warn("placing new queues failed; the registry watch places them", "error", err)
			}
		case <-lctx.Done():
			return firstErr(lead.Err(), ctx.Err(), s.Err())
		}
	}
}

// registryQueues lets the strategy read the registry in place: the
// leader holds the queues once, in the registry snapshot (which shares its
// buckets with the registry watch), not a second time as a []rebalance.Queue
// (48 bytes a queue: 4.8 MB at 100,000 queues, docs/decisions.md "Issue 14:
// the leader holds the registry once").
type registryQueues struct{ reg coordinator.Registry }

func (r registryQueues) Len() int { return r.reg.Len() }

func (r registryQueues) All() iter.Seq[rebalance.Queue] {
	return func(yield func(rebalance.Queue) bool) {
		for q := range r.reg.All() {
			if !yield(rebalance.Queue{Name: q.Name, Weight: q.Weight, Tags: q.Tags}) {
				return
			}
		}
	}
}

// liveMembers returns the members that may own queues and, apart, those in
// cutOffSet (unreachable from Redis past the grace).
func liveMembers(members []coordinator.MemberNode, cutOffSet map[string]bool) (live []rebalance.Member, cutOff []string) {
	seen := map[string]bool{}
	for _, m := range members {
		if m.Err != nil || m.Member.Name == "" || seen[m.Member.Name] {
			continue // a corrupt node, or an old session of a restarted member
		}
		seen[m.Member.Name] = true
		if cutOffSet[m.Member.Name] {
			cutOff = append(cutOff, m.Member.Name)
			continue
		}
		live = append(live, rebalance.FromMember(m.Member))
	}
	return live, cutOff
}

// writeTarget computes the target and writes it when it differs from the
// current assignment; place learns what the assignment now reflects.
// Members in cutOff get no queues, unless every member is in it: then the
// current assignment stands.
func writeTarget(ctx context.Context, lead Leadership, w AssignmentWriter, cfg RebalancerConfig, live []rebalance.Member, cutOff []string, queues coordinator.Registry, place *placement, log hclog.Logger) error {
	place.forget()
	in := rebalance.Input{Previous: w.Current().Queues, Members: live}
	if len(in.Members) == 0 && len(cutOff) > 0 {
		// No member can reach Redis: Redis itself is down, or the leader's
		// view of it is. Moving queues would gain nothing and cost a
		// handover each; the previous assignment stands (docs/decisions.md
		// "Issue 29: a member cut off from Redis").
		log.Warn("no member can reach Redis; the assignment stands", "members", cutOff)
		return nil
	}
	if len(cutOff) > 0 {
		log.Warn("members that cannot reach Redis get no queues", "members", cutOff)
	}
	in.Source = registryQueues{queues}
	start := time.Now()
	res, err := cfg.Strategy.Assign(in)
	compute := time.Since(start)
	if err != nil {
		return fmt.Errorf("compute assignment: %w", err)
	}
	if len(res.Unassignable) > 0 {
		log.Warn("queues no member may own (tags)", "queues", res.Unassignable)
	}
	cur := w.Current()
	if maps.Equal(cur.Queues, res.Queues) && cur.Strategy == cfg.Strategy.Name() {
		place.learn(cfg.Strategy, live, queues, res.Queues)
		return nil
	}
	actx, cancel, err := lead.Act(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	wstart := time.Now()
	next, err := w.Write(actx, drover.Assignment{Strategy: cfg.Strategy.Name(), Leader: cfg.Candidate, Queues: res.Queues})
	if err != nil {
		return err
	}
	write := time.Since(wstart)
	place.learn(cfg.Strategy, live, queues, next.Queues)
	moved := handovers(cur.Queues, res.Queues)
	log.Info("assignment written", "generation", next.Generation, "members", len(in.Members), "queues", len(res.Queues), "moved", moved, "compute", compute, "write", write)
	if cfg.OnRebalance != nil {
		cfg.OnRebalance(next, moved, compute)
	}
	return nil
}

// handovers counts the queues next takes from one member to another:
// rebalance.Moves's handovers, without listing and sorting every move (a
// tenth of a join's computation at 300,000 queues).
func handovers(prev, next map[string]string) int {
	n := 0
	for q, to := range next {
		if from := prev[q]; from != "" && to != "" && from != to {
			n++
		}
	}
	return n
}
