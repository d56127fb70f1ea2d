package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/drover-dev/drover"
)

// Bulk actions and search for fleets of many queues (issue 34): a queue is
// found by prefix or pattern from the names alone (two listings: the
// registry's buckets in ZooKeeper, the Redis set of queues enqueued to),
// and only the page of matches shown is read in detail. A bulk action
// selects queues by the same match or by name, and acts on them in batches.

// MaxBulk bounds the queues one bulk action may select.
const MaxBulk = 100_000

// bulkParallelism bounds the per-queue Redis calls of a bulk dead-letter
// action in flight.
const bulkParallelism = 16

// QueueNames lists every queue: configured (the registry) or ever enqueued
// to (the Redis set), sorted. It reads no queue's details.
func (o *Ops) QueueNames(ctx context.Context) (names []string, configured map[string]bool, err error) {
	conf, err := o.zk.QueueNames(ctx)
	if err != nil {
		return nil, nil, err
	}
	seen, err := o.store.Queues(ctx)
	if err != nil {
		return nil, nil, err
	}
	configured = make(map[string]bool, len(conf))
	for _, q := range conf {
		configured[q] = true
	}
	names = append([]string(nil), conf...)
	for _, q := range seen {
		if !configured[q] && drover.ValidateQueueName(q) == nil {
			names = append(names, q)
		}
	}
	sort.Strings(names)
	return names, configured, nil
}

// Match selects queue names: a pattern with *, ? or [ is a shell pattern
// (path.Match: "tenant-*-emails"); anything else is a prefix ("tenant-42").
// The empty match selects nothing; "*" selects everything.
type Match string

// Validate checks a pattern's syntax.
func (m Match) Validate() error {
	if m.glob() {
		if _, err := path.Match(string(m), ""); err != nil {
			return badInput("pattern %q: %v", string(m), err)
		}
	}
	return nil
}

func (m Match) glob() bool { return strings.ContainsAny(string(m), "*?[") }

// Matches reports whether q is selected.
func (m Match) Matches(q string) bool {
	if m == "" {
		return false
	}
	if m.glob() {
		ok, _ := path.Match(string(m), q)
		return ok
	}
	return strings.HasPrefix(q, string(m))
}

// filter returns the names m selects; sorted names in, sorted out. A
// prefix is found by binary search.
func (m Match) filter(names []string) []string {
	if m == "" {
		return nil
	}
	if !m.glob() {
		i := sort.SearchStrings(names, string(m))
		j := i
		for j < len(names) && strings.HasPrefix(names[j], string(m)) {
			j++
		}
		return names[i:j:j]
	}
	var out []string
	for _, q := range names {
		if m.Matches(q) {
			out = append(out, q)
		}
	}
	return out
}

// FindQueues returns the page of queues m selects, each read in full (its
// offset and owner from ZooKeeper, its backlog from Redis): the cost is
// two name listings plus the page's queues, whatever the fleet's size.
func (o *Ops) FindQueues(ctx context.Context, m Match, page, perPage int) (QueuePage, error) {
	if err := m.Validate(); err != nil {
		return QueuePage{}, err
	}
	q := QueueQuery{Page: page, PerPage: perPage}
	if err := q.Validate(); err != nil {
		return QueuePage{}, err
	}
	names, configured, err := o.QueueNames(ctx)
	if err != nil {
		return QueuePage{}, err
	}
	matched := m.filter(names)
	p := QueuePage{Total: len(matched), Page: q.Page, PerPage: q.PerPage, Pages: (len(matched) + q.PerPage - 1) / q.PerPage, Queues: []QueueRow{}}
	start := min((q.Page-1)*q.PerPage, len(matched))
	end := min(start+q.PerPage, len(matched))
	p.Queues, err = o.QueueRows(ctx, matched[start:end], configured)
	return p, err
}

// QueueRows reads the rows of the named queues (at most a page: the cost
// grows with len(queues), not with the fleet): each queue's offset and
// owner node, its pause flag, its backlog. configured marks which are
// configured (nil: all). Assigned is left empty: the assignment of a
// large fleet is a large node, and the owner is what the row shows.
func (o *Ops) QueueRows(ctx context.Context, queues []string, configured map[string]bool) ([]QueueRow, error) {
	rows := make([]QueueRow, 0, len(queues))
	if len(queues) == 0 {
		return rows, nil
	}
	pauses, err := o.zk.PausesOf(ctx, queues)
	if err != nil {
		return nil, err
	}
	views, err := o.zk.ReadQueueViews(ctx, queues, true)
	if err != nil {
		return nil, err
	}
	offsets := make([]drover.Position, len(queues))
	for i, v := range views {
		offsets[i] = v.Offset.Position
	}
	stats, err := o.store.Stats(ctx, queues, offsets)
	if err != nil {
		return nil, err
	}
	for i, q := range queues {
		views[i].Name = q
		r := queueRow(views[i], stats[i], "", pauses)
		r.Configured = configured == nil || configured[q]
		rows = append(rows, r)
	}
	return rows, nil
}

// SelectQueues returns the queues a bulk action acts on: the named ones
// (each must be known), or those m selects. It refuses an empty selection
// and one of more than MaxBulk queues.
func (o *Ops) SelectQueues(ctx context.Context, m Match, named []string) ([]string, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if (m == "") == (len(named) == 0) {
		return nil, badInput("select queues: give a match (prefix or pattern) or queue names, one of the two")
	}
	names, _, err := o.QueueNames(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	if m != "" {
		out = m.filter(names)
	} else {
		seen := map[string]bool{}
		for _, q := range named {
			i := sort.SearchStrings(names, q)
			if i == len(names) || names[i] != q {
				return nil, queueNotFound(q)
			}
			if !seen[q] {
				seen[q] = true
				out = append(out, q)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("select queues: no queue matches %q: %w", string(m), drover.ErrNotFound)
	}
	if len(out) > MaxBulk {
		return nil, badInput("select queues: %d match, more than the %d one action may take", len(out), MaxBulk)
	}
	return out, nil
}

// BulkResult is what a bulk action did.
type BulkResult struct {
	Action   string `json:"action"`
	Selected int    `json:"selected"` // queues selected
	Changed  int    `json:"changed"`  // queues (pause, resume) or dead letters (retry, purge) acted on
	Failed   int    `json:"failed,omitempty"`
	// Errors are the first few failures, "queue: error".
	Errors []string `json:"errors,omitempty"`
	// Millis is how long the action took.
	Millis int64 `json:"ms"`
}

// PauseQueues sets the pause flag of every queue in queues (by who, with
// reason) in batched ZooKeeper multis (coordinator.SetQueuePauses).
func (o *Ops) PauseQueues(ctx context.Context, queues []string, who, reason string) (BulkResult, error) {
	start := time.Now()
	n, err := o.zk.SetQueuePauses(ctx, queues, drover.Pause{By: who, At: o.now().UTC(), Reason: reason})
	return BulkResult{Action: "pause", Selected: len(queues), Changed: n, Millis: time.Since(start).Milliseconds()}, err
}

// ResumeQueues clears the pause flags of queues in batched multis; a queue
// not paused is left alone (not counted).
func (o *Ops) ResumeQueues(ctx context.Context, queues []string) (BulkResult, error) {
	start := time.Now()
	n, err := o.zk.ClearQueuePauses(ctx, queues)
	return BulkResult{Action: "resume", Selected: len(queues), Changed: n, Millis: time.Since(start).Milliseconds()}, err
}

// MaxRetryPerQueue bounds the dead letters one bulk retry puts back per
// queue; run it again for more.
const MaxRetryPerQueue = 1000

// RetryDeadQueues puts back up to MaxRetryPerQueue dead letters of each
// queue in queues (those with none cost one pipelined read, shared).
func (o *Ops) RetryDeadQueues(ctx context.Context, queues []string) (BulkResult, error) {
	return o.eachDead(ctx, "retry-dead", queues, func(ctx context.Context, q string) (int, error) {
		dls, err := o.store.DeadLetters(ctx, q, 0, MaxRetryPerQueue)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, dl := range dls {
			if _, err := o.store.RetryDead(ctx, q, dl.ID); err != nil && !errors.Is(err, drover.ErrNotFound) {
				return n, err
			}
			n++
		}
		return n, nil
	})
}

// PurgeDeadQueues deletes every dead letter of each queue in queues.
func (o *Ops) PurgeDeadQueues(ctx context.Context, queues []string) (BulkResult, error) {
	return o.eachDead(ctx, "purge-dead", queues, o.store.PurgeAllDead)
}

// eachDead runs f on the queues of queues that have dead letters (found
// with one pipelined read of every queue's figures), bulkParallelism at a
// time; a queue's failure is counted and the others go on.
func (o *Ops) eachDead(ctx context.Context, action string, queues []string, f func(ctx context.Context, q string) (int, error)) (BulkResult, error) {
	start := time.Now()
	res := BulkResult{Action: action, Selected: len(queues)}
	stats, err := o.store.Stats(ctx, queues, make([]drover.Position, len(queues)))
	if err != nil {
		return res, err
	}
	var mu sync.Mutex
	sem := make(chan struct{}, bulkParallelism)
	var wg sync.WaitGroup
	for i, q := range queues {
		if stats[i].Dead == 0 {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			n, err := f(ctx, q)
			mu.Lock()
			defer mu.Unlock()
			res.Changed += n
			if err != nil {
				res.Failed++
				if len(res.Errors) < 5 {
					res.Errors = append(res.Errors, q+": "+err.Error())
				}
			}
		}()
	}
	wg.Wait()
	res.Millis = time.Since(start).Milliseconds()
	return res, ctx.Err()
}

// RunningTask is one task running now somewhere in the fleet.
type RunningTask struct {
	Queue   string  `json:"queue"`
	Member  string  `json:"member"`
	ID      string  `json:"id"`
	Task    string  `json:"task"`
	Attempt int     `json:"attempt"`
	PID     int     `json:"pid"`
	Runtime float64 `json:"runtime_seconds"`
}

// Running is every task running now, longest-running first, and the
// members whose state could not be read (name: why).
type Running struct {
	Tasks       []RunningTask     `json:"tasks"`
	Unreachable map[string]string `json:"unreachable,omitempty"`
}

// Running reads every member's /debug/state (in parallel) and lists the
// tasks in flight.
func (o *Ops) Running(ctx context.Context) (Running, error) {
	members, err := o.zk.Members(ctx)
	if err != nil {
		return Running{}, err
	}
	out := Running{Tasks: []RunningTask{}, Unreachable: map[string]string{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range members {
		name, addr := m.Member.Name, m.Member.AdminAddr
		if addr == "" {
			out.Unreachable[name] = "no admin address (worker.admin_addr is off)"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw, err := o.fetchState(ctx, addr)
			var st MemberState
			if err == nil {
				st, err = DecodeMemberState(raw)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				out.Unreachable[name] = err.Error()
				return
			}
			for _, q := range st.Worker.Queues {
				for _, t := range q.InFlight {
					out.Tasks = append(out.Tasks, RunningTask{Queue: q.Name, Member: name, ID: t.ID, Task: t.Task, Attempt: t.Attempt, PID: t.PID, Runtime: t.Runtime})
				}
			}
		}()
	}
	wg.Wait()
	sort.Slice(out.Tasks, func(i, j int) bool {
		if out.Tasks[i].Runtime != out.Tasks[j].Runtime {
			return out.Tasks[i].Runtime > out.Tasks[j].Runtime
		}
		return out.Tasks[i].ID < out.Tasks[j].ID
	})
	if len(out.Unreachable) == 0 {
		out.Unreachable = nil
	}
	return out, ctx.Err()
}

// RunningIn returns the ids of q's tasks running now on its owner (one
// /debug/job request per id asked, in parallel): the queue page's running
// marker. Ids the owner does not answer for are left out.
func (o *Ops) RunningIn(ctx context.Context, owner string, q string, ids []string) map[string]RunningTask {
	out := map[string]RunningTask{}
	if owner == "" || len(ids) == 0 {
		return out
	}
	members, err := o.zk.Members(ctx)
	if err != nil {
		return out
	}
	addr := ""
	for _, m := range members {
		if m.Member.Name == owner {
			addr = m.Member.AdminAddr
		}
	}
	if addr == "" {
		return out
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t, ok := o.fetchJob(ctx, addr, q, id)
			if ok {
				mu.Lock()
				out[id] = RunningTask{Queue: q, Member: owner, ID: id, Task: t.Task, Attempt: t.Attempt, PID: t.PID, Runtime: t.Runtime}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// fetchJob asks a member's /debug/job whether it runs q's message id.
func (o *Ops) fetchJob(ctx context.Context, addr, q, id string) (InFlightTask, bool) {
	raw, err := o.get(ctx, "http://"+addr+"/debug/job?queue="+url.QueryEscape(q)+"&id="+url.QueryEscape(id))
	if err != nil {
		return InFlightTask{}, false
	}
	var js struct {
		Task struct {
			InFlightTask
		} `json:"task"`
	}
	if json.Unmarshal(raw, &js) != nil {
		return InFlightTask{}, false
	}
	return js.Task.InFlightTask, true
}
