package worker

import (
	"encoding/json"
	"sync"

	"github.com/drover-dev/drover"
)

// maxInternedConfigs bounds the distinct queue configurations a Worker
// shares. Fleets run many queues with few distinct settings; past the bound
// a configuration is kept private to its queue, which costs memory, not
// correctness.
const maxInternedConfigs = 4096

// configInterner shares one copy of each distinct queue configuration (with
// its defaults applied and its name cleared) among the queues that use it.
// A QueueConfig is 200 bytes before its task-route table; a worker owning
// 25,000 queues held one copy per queue (docs/decisions.md, "Issue 14: one
// compact record per owned queue"). Shared configurations are read-only:
// the loop replaces its pointer on a change and never edits one in place.
// The zero value is ready.
type configInterner struct {
	mu      sync.Mutex
	configs map[string]*drover.QueueConfig // canonical JSON → shared config
}

// intern returns the shared configuration equal to qc with its defaults
// applied and its Name cleared (the loop knows its queue's name).
func (in *configInterner) intern(qc drover.QueueConfig) *drover.QueueConfig {
	qc = qc.WithDefaults()
	qc.Name = ""
	// encoding/json writes struct fields in order and map keys sorted, so
	// equal configurations have equal keys.
	b, err := json.Marshal(qc)
	if err != nil {
		return &qc
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if c, ok := in.configs[string(b)]; ok {
		return c
	}
	if len(in.configs) >= maxInternedConfigs {
		return &qc
	}
	if in.configs == nil {
		in.configs = map[string]*drover.QueueConfig{}
	}
	in.configs[string(b)] = &qc
	return &qc
}
