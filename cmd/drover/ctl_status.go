package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/scaler"
)

// statusReport is `drover ctl status -o json`.
type statusReport struct {
	ops.FleetHead
	Members   []memberStatus   `json:"members"`
	Queues    []queueStatus    `json:"queues"`
	Autoscale scaler.Autoscale `json:"autoscale"`
	Notes     []string         `json:"notes,omitempty"`
}

// memberStatus is a member's line; ops.MemberRow has the same JSON.
type memberStatus = ops.MemberRow

// queueStatus is a queue's line: the console's row (ops.QueueRow, the
// same JSON) and the family its name falls under.
type queueStatus struct {
	ops.QueueRow
	// Family is the queue family whose prefix the name matches
	// (ctl_family.go); `ctl queue show` tells whether the family registered
	// it (its config's "family").
	Family string `json:"family,omitempty"`
}

func (a *app) ctlStatusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Members, leaders, generation, and per queue owner, offset, lag and age",
		Long: `Print the fleet: the members (REDIS "unreachable" for a member whose
Redis has not answered for worker.redis_giveup_after: it gets no queues,
and does not lead), the rebalance and scheduler leaders, the
assignment generation, and per queue (laid out like kafka-consumer-groups
--describe) the owner, the committed position, the log end, the lag in
messages, the age of the oldest unprocessed message, delayed and dead
counts, whether it is paused, and HELD "rate-limited" when its owner holds
its work back for its rate limit (asked of each member's admin server).`,
		Example: `  drover ctl status
  drover ctl status -o json | jq '.queues[] | select(.lag > 1000)'`,
		Args: noArgs,
		RunE: a.ctlRun(func(e *ctlEnv, args []string) error {
			rep, err := e.status(e.ctx)
			if err != nil {
				return err
			}
			if e.json {
				return writeJSON(e.a.stdout, rep)
			}
			return printStatus(e, rep)
		}),
	}
}

// status gathers the report from one fleet snapshot (package ops, as the
// web console reads it): the queues' owners and offsets are read pipelined
// from ZooKeeper and their backlogs in batches from Redis, so its cost does
// not grow by a round trip per queue. It fails, as it always did, when a
// queue's owner or offset node cannot be decoded.
func (e *ctlEnv) status(ctx context.Context) (*statusReport, error) {
	o, err := e.ops()
	if err != nil {
		return nil, err
	}
	snap, err := o.Members().ReadSnapshot(ctx, ops.SnapshotOptions{Owners: true, JoinOrder: true, RateLimits: true})
	if err != nil {
		return nil, err
	}
	rep := &statusReport{FleetHead: snap.FleetHead, Members: snap.Members, Queues: make([]queueStatus, 0, len(snap.Queues))}
	for _, r := range snap.Queues {
		if r.Error != "" {
			return nil, fmt.Errorf("queue %s: %s", r.Queue, r.Error)
		}
		rep.Queues = append(rep.Queues, queueStatus{QueueRow: r})
	}
	fams, err := o.Families().List(ctx)
	if err != nil {
		return nil, err
	}
	var families drover.Families
	for _, f := range fams {
		if f.Err == nil {
			families = append(families, f.Config)
		}
	}
	for i, q := range rep.Queues {
		if f, ok := families.Match(q.Queue); ok {
			rep.Queues[i].Family = f.Name
		}
	}
	lags := make([]int64, len(rep.Queues))
	for i, q := range rep.Queues {
		lags[i] = q.Lag
	}
	rep.Autoscale = scaler.AutoscaleOf(lags, int64(e.cfg.Scaler.TargetLag))
	rep.Notes = snap.Notes
	return rep, nil
}

// fmtPause says who paused and why, for a table: "alice@host: smtp
// outage"; "" when p is nil.
func fmtPause(p *drover.Pause) string {
	if p == nil {
		return ""
	}
	s := p.By
	if s == "" {
		s = "yes"
	}
	if p.Reason != "" {
		s += ": " + p.Reason
	}
	return oneLine(s, 48)
}

func printStatus(e *ctlEnv, rep *statusReport) error {
	none := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	e.printf("CLUSTER %s (%s)  GENERATION %d  STRATEGY %s\n", rep.Cluster, rep.Root, rep.Generation, none(rep.Strategy))
	leader := none(rep.RebalanceLeader)
	if rep.RebalanceLeader == "" && len(rep.Members) > 0 && !slices.ContainsFunc(rep.Members, func(m memberStatus) bool { return !m.RedisUnreachable }) {
		// A member that cannot reach Redis does not lead.
		leader = "(none: no member reaches Redis)"
	}
	e.printf("REBALANCE LEADER %s  SCHEDULER LEADER %s\n", leader, none(rep.SchedulerLeader))
	a := rep.Autoscale
	e.printf("WORKERS NEEDED %d for target lag %d (lag %d in %d queues)\n", a.WorkersNeeded, a.TargetLag, a.Lag, a.QueuesWithLag)
	if rep.PausedAll != nil {
		e.printf("PAUSED ALL by %s at %s: %s\n", rep.PausedAll.By, fmtTime(rep.PausedAll.At), rep.PausedAll.Reason)
	}
	e.printf("\n")
	t := newTable(e.a.stdout, "MEMBER", "HOST", "PID", "ADMIN", "CAPACITY", "TAGS", "QUEUES", "UP", "REDIS", "PAUSED")
	now := time.Now()
	for _, m := range rep.Members {
		redis := "ok"
		if m.RedisUnreachable {
			redis = "unreachable" // its queues are given up to the members that reach it
		}
		t.row(m.Name, m.Host, m.PID, m.AdminAddr, m.Capacity, strings.Join(m.Tags, ","), m.Queues, fmtAge(now.Sub(m.StartedAt)), redis, fmtPause(m.Paused))
	}
	if err := t.flush(); err != nil {
		return err
	}
	e.printf("\n")
	t = newTable(e.a.stdout, "QUEUE", "OWNER", "COMMITTED", "LOG-END", "LAG", "OLDEST", "DELAYED", "DEAD", "HELD", "FAMILY", "PAUSED")
	for _, q := range rep.Queues {
		owner := q.Owner
		if owner == "" && q.Assigned != "" {
			owner = "(" + q.Assigned + ")" // assigned, not claimed yet
		}
		paused := ""
		if q.Paused {
			paused = fmtPause(q.PausedBy)
		}
		name := q.Queue
		if !q.Configured {
			name += "*"
		}
		held := ""
		if q.RateLimited {
			held = "rate-limited"
		}
		t.row(name, owner, fmtPos(q.Committed), fmtPos(q.LogEnd), q.Lag, fmtAge(time.Duration(q.OldestAge*float64(time.Second))), q.Delayed, q.Dead, held, q.Family, paused)
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, q := range rep.Queues {
		if !q.Configured {
			e.printf("\n* enqueued to but not configured (drover ctl queue create; a queue under a FAMILY is registered by the rebalance leader)\n")
			break
		}
	}
	for _, n := range rep.Notes {
		e.printf("\nnote: %s\n", n)
	}
	return nil
}
