package web

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
)

// routeParkedAPI serves ordered queues parked at a failed head
// (docs/http-api.md, "Parked queues"): list, show the head, retry it (its
// args edited or not), move it to the dead letters. The mutations are
// audited like every other (HandleMutation), refusals included.
func (s *Server) routeParkedAPI() {
	s.HandleAPI("GET", "/parked", auth.Viewer, func(r *Request) (any, error) {
		return s.fleetOps().Jobs().ParkedQueues(r.Context())
	})
	s.HandleAPI("GET", "/queues/{queue}/parked", auth.Viewer, func(r *Request) (any, error) {
		return s.fleetOps().Jobs().ParkedHead(r.Context(), r.PathValue("queue"))
	})
	s.HandleMutation("POST", "/queues/{queue}/parked/retry", auth.Operator, "parked.retry", func(r *Request) (any, error) {
		in, err := parkedInput(r)
		if err != nil {
			return nil, err
		}
		q := r.PathValue("queue")
		if err := s.fleetOps().Jobs().RetryParked(r.Context(), q, in.ID, in.Args, in.KeepPaused); err != nil {
			return nil, err
		}
		return map[string]any{"queue": q, "id": in.ID, "retried": true, "args_edited": in.Args != nil, "resumed": !in.KeepPaused}, nil
	})
	s.HandleMutation("POST", "/queues/{queue}/parked/skip", auth.Operator, "parked.skip", func(r *Request) (any, error) {
		in, err := parkedInput(r)
		if err != nil {
			return nil, err
		}
		q := r.PathValue("queue")
		if err := s.fleetOps().Jobs().SkipParked(r.Context(), q, in.ID, r.Principal.Name, in.KeepPaused); err != nil {
			return nil, err
		}
		return map[string]any{"queue": q, "id": in.ID, "dead_lettered": true, "resumed": !in.KeepPaused}, nil
	})
}

// parkedAction is the body of a retry or skip: the head's id, the args
// that replace its args (retry; JSON of any type), whether to stay paused.
type parkedAction struct {
	ID         string          `json:"id"`
	Args       json.RawMessage `json:"args"`
	KeepPaused bool            `json:"keep_paused"`
}

// parkedInput reads a JSON body, or a form's id, args (JSON text) and
// keep_paused fields.
func parkedInput(r *Request) (parkedAction, error) {
	var in parkedAction
	if json.Valid(r.Body) && json.Unmarshal(r.Body, &in) == nil {
		return in, nil
	}
	in = parkedAction{ID: r.In.Get("id")}
	if a := r.In.Get("args"); a != "" {
		if !json.Valid([]byte(a)) {
			return in, ops.BadInput("args: not valid JSON")
		}
		in.Args = json.RawMessage(a)
	}
	if k := r.In.Get("keep_paused"); k != "" {
		b, err := strconv.ParseBool(k)
		if err != nil {
			return in, ops.BadInput("keep_paused: want true or false, have %q", k)
		}
		in.KeepPaused = b
	}
	return in, nil
}

// parkedArgs returns the args of the parked head id of q as JSON text, for
// the queue page's "edit args and retry" form; "" when the head's envelope
// cannot be read (the form then starts empty).
func (s *Server) parkedArgs(ctx context.Context, q, id string) string {
	m, err := s.fleetOps().Messages().Message(ctx, q, id)
	if err != nil || m.Envelope == nil {
		return ""
	}
	var env struct {
		Args json.RawMessage `json:"args"`
	}
	if json.Unmarshal(m.Envelope, &env) != nil || env.Args == nil {
		return ""
	}
	return string(env.Args)
}
