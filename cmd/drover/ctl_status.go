package main

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/queue"
)

// statusReport is `drover ctl status -o json`.
type statusReport struct {
	Cluster         string         `json:"cluster"`
	Root            string         `json:"root"`
	Generation      int64          `json:"generation"`
	Strategy        string         `json:"strategy,omitempty"`
	RebalanceLeader string         `json:"rebalance_leader,omitempty"`
	SchedulerLeader string         `json:"scheduler_leader,omitempty"`
	PausedAll       *drover.Pause  `json:"paused_all,omitempty"`
	Members         []memberStatus `json:"members"`
	Queues          []queueStatus  `json:"queues"`
	Autoscale       autoscaleLine  `json:"autoscale"`
}

type memberStatus struct {
	drover.Member
	Node   string        `json:"node"`
	Queues int           `json:"queues"` // queues assigned
	Paused *drover.Pause `json:"paused,omitempty"`
}

type queueStatus struct {
	Queue      string          `json:"queue"`
	Configured bool            `json:"configured"` // has /queues/<bucket>/<name>
	Assigned   string          `json:"assigned,omitempty"`
	Owner      string          `json:"owner,omitempty"`
	Committed  drover.Position `json:"committed"`
	LogEnd     drover.Position `json:"log_end"`
	Lag        int64           `json:"lag"`
	OldestAge  float64         `json:"oldest_age_seconds"`
	Delayed    int64           `json:"delayed"`
	Dead       int64           `json:"dead"`
	Paused     bool            `json:"paused"`
	PausedBy   *drover.Pause   `json:"paused_by,omitempty"`
}

func (a *app) ctlStatusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Members, leaders, generation, and per queue owner, offset, lag and age",
		Long: `Print the fleet: the members, the rebalance and scheduler leaders, the
assignment generation, and per queue (laid out like kafka-consumer-groups
--describe) the owner, the committed position, the log end, the lag in
messages, the age of the oldest unprocessed message, delayed and dead
counts, and whether it is paused.`,
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

// status gathers the report.
func (e *ctlEnv) status(ctx context.Context) (*statusReport, error) {
	s, err := e.zk()
	if err != nil {
		return nil, err
	}
	st, err := e.queues()
	if err != nil {
		return nil, err
	}
	rep := &statusReport{Cluster: e.cfg.Cluster, Root: s.Root(), Members: []memberStatus{}, Queues: []queueStatus{}}
	an, err := s.Assignment(ctx)
	if err != nil {
		return nil, err
	}
	rep.Generation, rep.Strategy = an.Assignment.Generation, an.Assignment.Strategy
	if rep.RebalanceLeader, err = leaderName(ctx, s, coordinator.ElectionRebalance); err != nil {
		return nil, err
	}
	if rep.SchedulerLeader, err = leaderName(ctx, s, coordinator.ElectionScheduler); err != nil {
		return nil, err
	}
	pauses, err := s.Pauses(ctx)
	if err != nil {
		return nil, err
	}
	rep.PausedAll = pauses.All

	members, err := s.Members(ctx)
	if err != nil {
		return nil, err
	}
	assigned := map[string]int{}
	for _, m := range an.Assignment.Queues {
		assigned[m]++
	}
	for _, m := range members {
		ms := memberStatus{Member: m.Member, Node: m.ID, Queues: assigned[m.Member.Name]}
		if p, ok := pauses.Members[m.Member.Name]; ok {
			ms.Paused = &p
		}
		rep.Members = append(rep.Members, ms)
	}

	names := map[string]bool{}
	configured, err := s.Queues(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range configured {
		names[q.Name] = true
	}
	seen, err := st.Queues(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range seen {
		if _, ok := names[q]; !ok {
			names[q] = false
		}
	}
	sorted := make([]string, 0, len(names))
	for q := range names {
		sorted = append(sorted, q)
	}
	sort.Strings(sorted)
	for _, q := range sorted {
		qs, err := queueStatusOf(ctx, s, st, q, an.Assignment, pauses)
		if err != nil {
			return nil, err
		}
		qs.Configured = names[q]
		rep.Queues = append(rep.Queues, qs)
	}
	rep.Autoscale = autoscaleOf(rep.Queues, int64(e.cfg.Scaler.TargetLag))
	return rep, nil
}

// queueStatusOf reads one queue's owner, offset and backlog.
func queueStatusOf(ctx context.Context, s *coordinator.Session, st *queue.Store, q string, as drover.Assignment, pauses coordinator.PauseSet) (queueStatus, error) {
	qs := queueStatus{Queue: q, Assigned: as.Queues[q]}
	owner, err := s.QueueOwner(ctx, q)
	switch {
	case err == nil:
		qs.Owner = owner.Owner.Member
	case errors.Is(err, drover.ErrNotFound):
	default:
		return qs, err
	}
	off, err := s.ReadOffset(ctx, q)
	if err != nil && !errors.Is(err, drover.ErrNotFound) {
		return qs, err
	}
	qs.Committed = off.Offset.Position
	b, err := st.Backlog(ctx, q, qs.Committed)
	if err != nil {
		return qs, err
	}
	qs.Lag, qs.OldestAge, qs.Delayed, qs.Dead = b.Lag, b.OldestAge.Seconds(), b.Delayed, b.Dead
	if end, err := st.LastPosition(ctx, q); err == nil {
		qs.LogEnd = end
	} else if !errors.Is(err, drover.ErrNotFound) {
		return qs, err
	}
	member := qs.Owner
	if member == "" {
		member = qs.Assigned
	}
	if p, ok := pauses.Paused(q, member); ok {
		qs.Paused, qs.PausedBy = true, &p
	}
	return qs, nil
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

// leaderName returns the name of the election's leader, "" when none.
func leaderName(ctx context.Context, s *coordinator.Session, election string) (string, error) {
	el, err := s.Election(election)
	if err != nil {
		return "", err
	}
	li, err := el.Leader(ctx)
	if errors.Is(err, drover.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return li.Name, nil
}

func printStatus(e *ctlEnv, rep *statusReport) error {
	none := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	e.printf("CLUSTER %s (%s)  GENERATION %d  STRATEGY %s\n", rep.Cluster, rep.Root, rep.Generation, none(rep.Strategy))
	e.printf("REBALANCE LEADER %s  SCHEDULER LEADER %s\n", none(rep.RebalanceLeader), none(rep.SchedulerLeader))
	a := rep.Autoscale
	e.printf("WORKERS NEEDED %d for target lag %d (lag %d in %d queues)\n", a.WorkersNeeded, a.TargetLag, a.Lag, a.QueuesWithLag)
	if rep.PausedAll != nil {
		e.printf("PAUSED ALL by %s at %s: %s\n", rep.PausedAll.By, fmtTime(rep.PausedAll.At), rep.PausedAll.Reason)
	}
	e.printf("\n")
	t := newTable(e.a.stdout, "MEMBER", "HOST", "PID", "ADMIN", "CAPACITY", "TAGS", "QUEUES", "UP", "PAUSED")
	now := time.Now()
	for _, m := range rep.Members {
		t.row(m.Name, m.Host, m.PID, m.AdminAddr, m.Capacity, strings.Join(m.Tags, ","), m.Queues, fmtAge(now.Sub(m.StartedAt)), fmtPause(m.Paused))
	}
	if err := t.flush(); err != nil {
		return err
	}
	e.printf("\n")
	t = newTable(e.a.stdout, "QUEUE", "OWNER", "COMMITTED", "LOG-END", "LAG", "OLDEST", "DELAYED", "DEAD", "PAUSED")
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
		t.row(name, owner, fmtPos(q.Committed), fmtPos(q.LogEnd), q.Lag, fmtAge(time.Duration(q.OldestAge*float64(time.Second))), q.Delayed, q.Dead, paused)
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, q := range rep.Queues {
		if !q.Configured {
			e.printf("\n* enqueued to but not configured (drover ctl queue create)\n")
			break
		}
	}
	return nil
}
