package web

import (
	"github.com/drover-dev/drover/internal/auth"
)

// routeCancelAPI serves the cancel of a running task (docs/http-api.md,
// "Cancel a running task"): POST with then = dead, retry or park (JSON or
// a form; empty for the queue's default). The queue's owner kills the
// task's process group; the answer is the task being stopped, or 409 when
// the message does not run now (saying where it is). Audited, refusals
// included, like every mutation.
func (s *Server) routeCancelAPI() {
	s.HandleMutation("POST", "/queues/{queue}/running/{id}/cancel", auth.Operator, "job.cancel", func(r *Request) (any, error) {
		return s.fleetOps().Jobs().Cancel(r.Context(), r.PathValue("queue"), r.PathValue("id"), r.Principal.Name, r.In.Get("then"))
	})
}
