package ops

import (
	"cmp"
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/queue"
)

// Snapshot is the whole fleet at one moment: what the overview, queues and
// members pages show.
type Snapshot struct {
	FleetHead
	At      time.Time   `json:"at"`
	Members []MemberRow `json:"members"`
	Queues  []QueueRow  `json:"queues"`
	Totals  Totals      `json:"totals"`
	// Notes say what the snapshot could not tell (a member that did not
	// say which queues wait for their rate limit).
	Notes []string `json:"notes,omitempty"`
}

// FleetHead is what a snapshot says of the fleet as a whole, as the
// overview page (GET /api/v1/overview) and `drover ctl status` show it.
type FleetHead struct {
	Cluster         string        `json:"cluster"`
	Root            string        `json:"root"`
	Generation      int64         `json:"generation"`
	Strategy        string        `json:"strategy,omitempty"`
	RebalanceLeader string        `json:"rebalance_leader,omitempty"`
	SchedulerLeader string        `json:"scheduler_leader,omitempty"`
	PausedAll       *drover.Pause `json:"paused_all,omitempty"`
}

// Totals sum the queues.
type Totals struct {
	Queues  int     `json:"queues"`
	Owned   int     `json:"owned"`
	Paused  int     `json:"paused"`
	Lag     int64   `json:"lag"`
	Delayed int64   `json:"delayed"`
	Dead    int64   `json:"dead"`
	MaxAge  float64 `json:"max_oldest_age_seconds"`
}

// MemberRow is one live member.
type MemberRow struct {
	drover.Member
	Node   string        `json:"node"`
	Queues int           `json:"queues"` // queues assigned
	Paused *drover.Pause `json:"paused,omitempty"`
}

// QueueRow is one queue: the same fields as `drover ctl status -o json`.
type QueueRow struct {
	Queue      string `json:"queue"`
	Configured bool   `json:"configured"`
	Assigned   string `json:"assigned,omitempty"`
	// Owned says whether a member holds the queue's claim. Owner is that
	// member on the queue's own page (GET /queues/{queue}); in the list it
	// is the assigned member when the queue is owned, which differs only
	// for the moment a moving queue is handed over.
	Owned     bool            `json:"owned"`
	Owner     string          `json:"owner,omitempty"`
	Committed drover.Position `json:"committed"`
	LogEnd    drover.Position `json:"log_end"`
	Lag       int64           `json:"lag"`
	OldestAge float64         `json:"oldest_age_seconds"`
	Delayed   int64           `json:"delayed"`
	Dead      int64           `json:"dead"`
	Paused    bool            `json:"paused"`
	PausedBy  *drover.Pause   `json:"paused_by,omitempty"`
	// RateLimited: its owner holds its work back for its rate limit
	// (asked of the members: SnapshotOptions.RateLimits, and a queue's
	// own page); not lagging for no reason.
	RateLimited bool   `json:"rate_limited,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Snapshot reads the fleet. Its cost is a handful of ZooKeeper listings,
// two pipelined reads per queue from ZooKeeper (owner, offset;
// coordinator.ViewParallelism in flight) and len(queues)/queue.StatsBatch+2
// Redis round trips of plain commands: no per-queue script.
func (o Members) Snapshot(ctx context.Context) (*Snapshot, error) {
	return o.ReadSnapshot(ctx, SnapshotOptions{})
}

// SnapshotOptions choose what ReadSnapshot reads beyond Snapshot.
type SnapshotOptions struct {
	// Owners reads every queue's owner node, so that QueueRow.Owner is the
	// member holding the claim even while a moving queue is handed over
	// (`drover ctl status`): one more pipelined ZooKeeper read per queue.
	Owners bool
	// JoinOrder lists the members in the order they joined (their
	// sequence numbers) instead of by name.
	JoinOrder bool
	// RateLimits asks every member which queues wait for their rate
	// limit (RateLimitedQueues: one request per member) to set
	// QueueRow.RateLimited; a member that does not answer leaves its
	// queues unflagged and its failure in Snapshot.Notes.
	RateLimits bool
}

// ReadSnapshot is Snapshot with options.
func (o Members) ReadSnapshot(ctx context.Context, opt SnapshotOptions) (*Snapshot, error) {
	s := o.zk
	snap := &Snapshot{FleetHead: FleetHead{Cluster: o.cluster, Root: s.Root()}, At: o.now().UTC(), Members: []MemberRow{}, Queues: []QueueRow{}}
	an, err := s.Assignments().Read(ctx)
	if err != nil {
		return nil, err
	}
	snap.Generation, snap.Strategy = an.Assignment.Generation, an.Assignment.Strategy
	if snap.RebalanceLeader, err = o.leaderName(ctx, coordinator.ElectionRebalance); err != nil {
		return nil, err
	}
	if snap.SchedulerLeader, err = o.leaderName(ctx, coordinator.ElectionScheduler); err != nil {
		return nil, err
	}
	pauses, err := s.Pauses().Read(ctx)
	if err != nil {
		return nil, err
	}
	snap.PausedAll = pauses.All
	members, err := s.Group().Members(ctx)
	if err != nil {
		return nil, err
	}
	assigned := map[string]int{}
	for _, m := range an.Assignment.Queues {
		assigned[m]++
	}
	for _, m := range members {
		mr := MemberRow{Member: m.Member, Node: m.ID, Queues: assigned[m.Member.Name]}
		if p, ok := pauses.Members[m.Member.Name]; ok {
			mr.Paused = &p
		}
		snap.Members = append(snap.Members, mr)
	}
	if !opt.JoinOrder { // s.Members lists them in join order
		sort.Slice(snap.Members, func(i, j int) bool { return snap.Members[i].Name < snap.Members[j].Name })
	}

	names, isConfigured, err := o.queueNames(ctx)
	if err != nil {
		return nil, err
	}
	views, stats, err := o.viewsAndStats(ctx, names, opt.Owners)
	if err != nil {
		return nil, err
	}
	var held map[string]bool
	if opt.RateLimits {
		var err error
		if held, err = o.RateLimitedQueues(ctx, snap.Members); err != nil {
			snap.Notes = append(snap.Notes, "rate limits not shown for every queue: "+err.Error())
		}
	}
	snap.Queues = make([]QueueRow, len(names))
	for i, q := range names {
		r := queueRow(views[i], stats[i], an.Assignment.Queues[q], pauses)
		r.RateLimited = held[q]
		if !opt.Owners && r.Owned {
			r.Owner = r.Assigned // the list reads no owner node: see QueueRow.Owner
		}
		r.Configured = isConfigured[q]
		snap.Queues[i] = r
		t := &snap.Totals
		t.Queues++
		if r.Owned {
			t.Owned++
		}
		if r.Paused {
			t.Paused++
		}
		t.Lag += r.Lag
		t.Delayed += r.Delayed
		t.Dead += r.Dead
		t.MaxAge = max(t.MaxAge, r.OldestAge)
	}
	return snap, nil
}

// viewsAndStats reads the views of queues (their owner nodes too when
// owners) and each queue's statistics measured after its committed
// offset, each read batched over the queues.
func (o *core) viewsAndStats(ctx context.Context, queues []string, owners bool) ([]coordinator.QueueView, []queue.QueueStats, error) {
	views, err := o.zk.Queues().Views(ctx, queues, owners)
	if err != nil {
		return nil, nil, err
	}
	offsets := make([]drover.Position, len(views))
	for i, v := range views {
		offsets[i] = v.Offset.Position
	}
	stats, err := o.store.Inspector().Stats(ctx, queues, offsets)
	if err != nil {
		return nil, nil, err
	}
	return views, stats, nil
}

// queueRow joins a queue's ZooKeeper view, its Redis figures, the member it
// is assigned to and the pauses into a row; Configured is left to the caller.
// The pause that applies is the owner's, or the assigned member's when
// nobody (known) owns the queue.
func queueRow(v coordinator.QueueView, st queue.QueueStats, assigned string, pauses coordinator.PauseSet) QueueRow {
	r := QueueRow{Queue: v.Name, Assigned: assigned, Owned: v.Owned, Owner: v.Owner,
		Committed: v.Offset.Position, LogEnd: st.LogEnd, Lag: st.Lag, OldestAge: st.OldestAge.Seconds(),
		Delayed: st.Delayed, Dead: st.Dead}
	if v.Err != nil {
		r.Error = v.Err.Error()
	}
	member := r.Owner
	if member == "" {
		member = r.Assigned
	}
	if p, ok := pauses.Paused(v.Name, member); ok {
		r.Paused, r.PausedBy = true, &p
	}
	return r
}

func (o *core) leaderName(ctx context.Context, election string) (string, error) {
	return LeaderName(ctx, o.zk, election)
}

// LeaderName returns the name of the election's leader, "" when none leads.
func LeaderName(ctx context.Context, s *coordinator.Session, election string) (string, error) {
	el, err := s.Group().Election(election)
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

// Queue returns the snapshot's row of q, or an error wrapping
// drover.ErrQueueNotFound.
func (s *Snapshot) Queue(q string) (QueueRow, error) {
	i := sort.Search(len(s.Queues), func(i int) bool { return s.Queues[i].Queue >= q })
	if i < len(s.Queues) && s.Queues[i].Queue == q {
		return s.Queues[i], nil
	}
	return QueueRow{}, queueNotFound(q)
}

func queueNotFound(q string) error {
	return errors.Join(drover.ErrQueueNotFound, errors.New("queue "+q+" is neither configured nor ever enqueued to"))
}

// QueueQuery selects, orders and pages queue rows.
type QueueQuery struct {
	Filter  string // substring of the name, owner or assigned member
	Sort    string // queue (default), owner, lag, age, delayed, dead, paused
	Desc    bool
	Page    int // from 1
	PerPage int // default 100, at most 1000
	// Only narrows to "paused", "unowned", "lagging" (lag > 0) or "dead" (dead > 0).
	Only string
}

// QueuePage is one page of queue rows.
type QueuePage struct {
	Total   int        `json:"total"` // rows matching the filter
	Page    int        `json:"page"`
	PerPage int        `json:"per_page"`
	Pages   int        `json:"pages"`
	Queues  []QueueRow `json:"queues"`
}

// SortKeys are the accepted QueueQuery.Sort values.
var SortKeys = []string{"queue", "owner", "lag", "age", "delayed", "dead", "paused"}

// Validate checks the query and fills defaults.
func (q *QueueQuery) Validate() error {
	if q.Sort == "" {
		q.Sort = "queue"
	}
	ok := false
	for _, k := range SortKeys {
		ok = ok || k == q.Sort
	}
	if !ok {
		return badInput("sort %q: want one of %s", q.Sort, strings.Join(SortKeys, ", "))
	}
	switch q.Only {
	case "", "paused", "unowned", "lagging", "dead":
	default:
		return badInput("only %q: want paused, unowned, lagging or dead", q.Only)
	}
	if q.Page == 0 {
		q.Page = 1
	}
	if q.Page < 1 {
		return badInput("page %d: want ≥ 1", q.Page)
	}
	if q.PerPage == 0 {
		q.PerPage = 100
	}
	if q.PerPage < 1 || q.PerPage > 1000 {
		return badInput("per_page %d: want 1 to 1000", q.PerPage)
	}
	return nil
}

// Select returns the page of the snapshot's queues that q asks for.
func (s *Snapshot) Select(q QueueQuery) (QueuePage, error) {
	if err := q.Validate(); err != nil {
		return QueuePage{}, err
	}
	rows := make([]QueueRow, 0, len(s.Queues))
	f := strings.ToLower(q.Filter)
	for _, r := range s.Queues {
		if f != "" && !strings.Contains(strings.ToLower(r.Queue), f) && !strings.Contains(strings.ToLower(r.Owner), f) && !strings.Contains(strings.ToLower(r.Assigned), f) {
			continue
		}
		switch q.Only {
		case "paused":
			if !r.Paused {
				continue
			}
		case "unowned":
			if r.Owner != "" {
				continue
			}
		case "lagging":
			if r.Lag == 0 {
				continue
			}
		case "dead":
			if r.Dead == 0 {
				continue
			}
		}
		rows = append(rows, r)
	}
	less := map[string]func(a, b QueueRow) int{
		"queue":   func(a, b QueueRow) int { return 0 },
		"owner":   func(a, b QueueRow) int { return strings.Compare(a.Owner, b.Owner) },
		"lag":     func(a, b QueueRow) int { return cmp.Compare(a.Lag, b.Lag) },
		"age":     func(a, b QueueRow) int { return cmp.Compare(a.OldestAge, b.OldestAge) },
		"delayed": func(a, b QueueRow) int { return cmp.Compare(a.Delayed, b.Delayed) },
		"dead":    func(a, b QueueRow) int { return cmp.Compare(a.Dead, b.Dead) },
		"paused":  func(a, b QueueRow) int { return cmpBool(a.Paused, b.Paused) },
	}[q.Sort]
	sort.SliceStable(rows, func(i, j int) bool {
		c := less(rows[i], rows[j])
		if c == 0 {
			c = strings.Compare(rows[i].Queue, rows[j].Queue)
		}
		if q.Desc {
			return c > 0
		}
		return c < 0
	})
	p := QueuePage{Total: len(rows), Page: q.Page, PerPage: q.PerPage, Pages: (len(rows) + q.PerPage - 1) / q.PerPage}
	start := min((q.Page-1)*q.PerPage, len(rows))
	end := min(start+q.PerPage, len(rows))
	p.Queues = rows[start:end]
	return p, nil
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}
