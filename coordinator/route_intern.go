package coordinator

import (
	"encoding/json"
	"sync"

	"github.com/drover-dev/drover"
)

// maxInternedRoutes bounds the distinct task-route tables a Session shares.
// Fleets configure many queues with few distinct route tables; past the
// bound a table is kept unshared, which costs memory, not correctness.
const maxInternedRoutes = 1024

// routeInterner shares one copy of each distinct QueueConfig.Tasks table
// among the configs a Session keeps for long (ConfigWatch). A
// decoded table is a map of about 700 bytes; a worker watching 25,000
// queues held two copies per queue (docs/decisions.md, "Issue 14: one
// task-route table per distinct value"). Shared tables are read-only: the
// paths that hand them out say so, and the paths whose results callers edit
// (Queues.Get, Queues.List) do not intern. The zero value is ready.
type routeInterner struct {
	mu     sync.Mutex
	tables map[string]map[string]drover.TaskRoute // canonical JSON → table
}

// intern returns the shared table equal to tasks, registering tasks as the
// shared one when it is new and there is room. Empty tables are returned
// as they are.
func (r *routeInterner) intern(tasks map[string]drover.TaskRoute) map[string]drover.TaskRoute {
	if len(tasks) == 0 {
		return tasks
	}
	// encoding/json writes map keys sorted, so equal tables have equal keys.
	b, err := json.Marshal(tasks)
	if err != nil {
		return tasks
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.tables[string(b)]; ok {
		return t
	}
	if len(r.tables) >= maxInternedRoutes {
		return tasks
	}
	if r.tables == nil {
		r.tables = map[string]map[string]drover.TaskRoute{}
	}
	r.tables[string(b)] = tasks
	return tasks
}

// shared is e with its task routes interned.
func (r *routeInterner) shared(e QueueEntry) QueueEntry {
	e.Config.Tasks = r.intern(e.Config.Tasks)
	return e
}
