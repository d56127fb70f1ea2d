package ops

import (
	"encoding/json"

	"github.com/drover-dev/drover"
)

// MemberState is the part of a member's /debug/state (MemberState's
// document) that `drover ctl dump` and the console's member page show as
// tables: the worker's state under "worker", the member's generation next
// to it. The whole document is shown as served besides.
type MemberState struct {
	Worker     WorkerState `json:"worker"`
	Generation int64       `json:"generation"`
}

// WorkerState is a worker's live state as /debug/state serves it (see
// worker.State).
type WorkerState struct {
	Member    string `json:"member"`
	Suspended bool   `json:"suspended"`
	Paused    struct {
		All    bool            `json:"all"`
		Member bool            `json:"member"`
		Queues map[string]bool `json:"queues"`
	} `json:"paused"`
	Capacity int                `json:"capacity"`
	InUse    int                `json:"in_use"`
	Queues   []WorkerQueueState `json:"queues"`
	// Pools are the warm children of pooled routes (docs/process-pool.md).
	Pools []WorkerPool `json:"pools"`
}

// WorkerQueueState is one queue a worker owns.
type WorkerQueueState struct {
	Name      string          `json:"name"`
	Committed drover.Position `json:"committed"`
	Done      drover.Position `json:"done"`
	Fetched   drover.Position `json:"fetched"`
	Buffered  int             `json:"buffered"`
	Paused    bool            `json:"paused"`
	// RateLimited: its work waits for a token of its rate limit.
	RateLimited bool           `json:"rate_limited,omitempty"`
	InFlight    []InFlightTask `json:"in_flight"`
}

// InFlightTask is one task a worker is running.
type InFlightTask struct {
	ID      string  `json:"id"`
	Task    string  `json:"task"`
	Attempt int     `json:"attempt"`
	PID     int     `json:"pid"`
	Runtime float64 `json:"runtime_seconds"`
}

// DecodeMemberState reads a /debug/state document: one that holds the
// worker's state under "worker" (what members serve), or the worker's state
// itself (an older or hand-written document), which leaves Generation 0.
func DecodeMemberState(body []byte) (MemberState, error) {
	var wrapped struct {
		Worker     *WorkerState `json:"worker"`
		Generation int64        `json:"generation"`
	}
	if err := json.Unmarshal(body, &wrapped); err != nil {
		return MemberState{}, err
	}
	if wrapped.Worker != nil {
		return MemberState{Worker: *wrapped.Worker, Generation: wrapped.Generation}, nil
	}
	var ms MemberState
	err := json.Unmarshal(body, &ms.Worker)
	return ms, err
}

// WorkerPool is the pool of warm children of one pooled route.
type WorkerPool struct {
	Queue    string           `json:"queue"`  // the queue whose task opened the pool
	Queues   int              `json:"queues"` // how many queues use it (a pool serves every queue of its route)
	Route    drover.TaskRoute `json:"route"`
	Children []PoolChild      `json:"children"`
}

// PoolChild is one warm child of a pool.
type PoolChild struct {
	PID         int     `json:"pid"`
	Busy        bool    `json:"busy"`
	TasksServed int     `json:"tasks_served"`
	RSSBytes    int64   `json:"rss_bytes"`
	AgeSeconds  float64 `json:"age_seconds"`
}
