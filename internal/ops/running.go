package ops

import (
	"context"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
	"sync"
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
// in parallel) and lists the tasks in flight.
func (o *Ops) Running(ctx context.Context) (Running, error) {
	members, err := o.zk.Group().Members(ctx)
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
			// Only the queues running a task (worker.StateRunning); a worker
			// from before that form answers 400 and is read in full.
			raw, err := o.fetchState(ctx, addr, "queues=running")
			if err != nil && strings.Contains(err.Error(), "400 Bad Request") {
				raw, err = o.fetchState(ctx, addr, "")
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

// RunningIn returns the ids of q's tasks running now on its owner (one
// /debug/job request per id asked, in parallel): the queue page's running
// marker. Ids the owner does not answer for are left out.
func (o *Ops) RunningIn(ctx context.Context, owner string, q string, ids []string) map[string]RunningTask {
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
