package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

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

// Running reads every member's running queues (/debug/state?queues=running,
// in parallel) and lists the tasks in flight. Each member is waited for at
// most memberBound: one that does not answer by then (a stopped process
// whose socket still accepts) is named in Unreachable and the others are
// listed; it fails only when ctx ends (or the members cannot be listed).
func (o Members) Running(ctx context.Context) (Running, error) {
	members, err := o.zk.Group().Members(ctx)
	if err != nil {
		return Running{}, err
	}
	out := Running{Tasks: []RunningTask{}, Unreachable: map[string]string{}}
	bound := o.memberBound(ctx)
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
			// Only the queues running a task (worker.StateRunning); a worker
			// from before that form answers 400 and is read in full.
			mctx, cancel := context.WithTimeout(ctx, bound)
			defer cancel()
			raw, err := o.fetchState(mctx, addr, "queues=running")
			if err != nil && strings.Contains(err.Error(), "400 Bad Request") {
				raw, err = o.fetchState(mctx, addr, "")
			}
			if err != nil && mctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("did not answer within %v", bound.Round(time.Millisecond))
			}
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

// memberTimeout bounds the wait for one member's answer in Running.
const memberTimeout = 2 * time.Second

// memberBound is how long Running waits for each member: memberTimeout,
// or less when ctx's deadline leaves less than twice that, so that the
// answers that came are still sent within the caller's bound (the
// console's 5 s).
func (o *core) memberBound(ctx context.Context) time.Duration {
	d := memberTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, dl.Sub(o.now())/2)
	}
	return max(d, 0)
}

// RunningIn returns the ids of q's tasks running now on its owner (one
// /debug/job request per id asked, in parallel): the queue page's running
// marker. Ids the owner does not answer for are left out.
func (o Members) RunningIn(ctx context.Context, owner string, q string, ids []string) map[string]RunningTask {
	out := map[string]RunningTask{}
	if owner == "" || len(ids) == 0 {
		return out
	}
	members, err := o.zk.Group().Members(ctx)
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
func (o *core) fetchJob(ctx context.Context, addr, q, id string) (InFlightTask, bool) {
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
