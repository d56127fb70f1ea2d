package drover

import "time"

// Offset is a queue's committed read position: every message at or below
// Position is done. It is stored in ZooKeeper at /offsets/<queue>.
type Offset struct {
	Position    Position  `json:"position"`
	ID          string    `json:"id,omitempty"` // the message at Position, for people
	CommittedAt time.Time `json:"committed_at"`
	Member      string    `json:"member,omitempty"`
}

// Member describes one worker in the fleet (/members/m-<seq>).
type Member struct {
	Name      string    `json:"name"` // stable across restarts (default: hostname)
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	Version   string    `json:"version"`
	AdminAddr string    `json:"admin_addr,omitempty"`
	Capacity  int       `json:"capacity"` // executor slots; weight in balancing
	Tags      []string  `json:"tags,omitempty"`
	StartedAt time.Time `json:"started_at"`
	// RedisUnreachable is set while this member's Redis has not answered
	// it for the worker's redis_giveup_after: the rebalance leader then
	// gives the member no queues, unless no member can reach Redis
	// (docs/decisions.md "Issue 29: a member cut off from Redis").
	RedisUnreachable bool `json:"redis_unreachable,omitempty"`
}

// Assignment maps every queue to the name of the member that owns it. It is
// written by the rebalance leader to /assignment.
type Assignment struct {
	Generation int64             `json:"generation"`
	Strategy   string            `json:"strategy"`
	Leader     string            `json:"leader"`
	Queues     map[string]string `json:"queues"` // queue → member name
}

// Owned returns the queues assigned to member, in no particular order.
func (a *Assignment) Owned(member string) []string {
	var qs []string
	for q, m := range a.Queues {
		if m == member {
			qs = append(qs, q)
		}
	}
	return qs
}

// Pause is a pause flag (/pause/all, /pause/queues/<q>, /pause/members/<name>).
type Pause struct {
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
	// Head is set when an ordered queue with on_failure park paused
	// itself at a failed head message: which one, and why it failed.
	Head *ParkedHead `json:"head,omitempty"`
}

// ParkedHead is the message an ordered queue parked at: it used its
// attempts, and nothing behind it runs until an operator retries it (its
// args edited or not) or moves it to the dead letters, then resumes.
type ParkedHead struct {
	ID       string   `json:"id"`
	Position Position `json:"position"`
	Task     string   `json:"task"`
	Attempts int      `json:"attempts"` // attempts made
	Error    string   `json:"error"`    // the last attempt's failure
	ExitCode int      `json:"exit_code"`
}

// PauseScope says what a pause flag covers.
type PauseScope string

// Pause scopes.
const (
	PauseAll    PauseScope = "all"
	PauseQueue  PauseScope = "queues"
	PauseMember PauseScope = "members"
)
