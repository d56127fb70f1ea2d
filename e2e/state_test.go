package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/drover-dev/drover/worker"
)

// debugState is a worker's /debug/state.
type debugState struct {
	Worker     worker.State `json:"worker"`
	Generation int64        `json:"generation"`
}

func (d *debugState) inFlight() int {
	n := 0
	for _, q := range d.Worker.Queues {
		n += len(q.InFlight)
	}
	return n
}

// state fetches a worker's /debug/state through its member node's
// admin_addr; nil when it is not reachable (yet).
func (f *fleet) state(name string) *debugState {
	ms, err := f.zk.Group().Members(context.Background())
	if err != nil {
		return nil
	}
	for _, m := range ms {
		if m.Member.Name != name || m.Member.AdminAddr == "" {
			continue
		}
		c := http.Client{Timeout: 2 * time.Second}
		resp, err := c.Get("http://" + m.Member.AdminAddr + "/debug/state")
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var st debugState
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return nil
		}
		return &st
	}
	return nil
}
