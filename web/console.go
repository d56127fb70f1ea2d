package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
)

// The console for many queues (issue 34): search by prefix or pattern,
// bulk actions on a selection, and the tasks running now across the fleet.
//
//	GET  /api/v1/find?match=&page=&per_page=   viewer: queues by prefix or pattern
//	GET  /api/v1/running                       viewer: tasks running now
//	GET  /api/v1/queues/{queue}/recent         viewer: recently finished and retrying jobs
//	POST /api/v1/bulk/pause                    operator: pause the selection
//	POST /api/v1/bulk/resume                   operator: resume it
//	POST /api/v1/bulk/retry-dead               operator: put back its dead letters
//	POST /api/v1/bulk/purge-dead               admin: delete its dead letters
//
// A bulk action's selection is a match (match=prefix or pattern) or names
// (queues=a,b,c; a JSON array; or one form field "queue" per name). It is
// one audit record with the selection and its count.
func (s *Server) routeConsole() {
	s.HandleAPI("GET", "/find", auth.Viewer, func(r *Request) (any, error) {
		in := queryInts{r: r}
		page, per := in.get("page", 1), in.get("per_page", 100)
		if in.err != nil {
			return nil, in.err
		}
		return s.fleetOps().Find().Queues(r.Context(), ops.Match(r.URL.Query().Get("match")), page, per)
	})
	s.HandleAPI("GET", "/queues/{queue}/recent", auth.Viewer, func(r *Request) (any, error) {
		limit, err := queryInt(r, "limit", 50)
		if err != nil {
			return nil, err
		}
		if limit < 1 || limit > 500 {
			return nil, Errorf(http.StatusBadRequest, "limit %d: want 1 to 500", limit)
		}
		return s.fleetOps().Messages().Recent(r.Context(), r.PathValue("queue"), limit)
	})
	s.HandleAPI("GET", "/running", auth.Viewer, func(r *Request) (any, error) {
		return s.fleetOps().Members().Running(r.Context())
	})
	s.HandleMutation("POST", "/bulk/pause", auth.Operator, "bulk.pause", s.bulk(func(r *Request, qs []string) (ops.BulkResult, error) {
		return s.fleetOps().Find().Pause(r.Context(), qs, r.Principal.Name, r.In.Get("reason"))
	}))
	s.HandleMutation("POST", "/bulk/resume", auth.Operator, "bulk.resume", s.bulk(func(r *Request, qs []string) (ops.BulkResult, error) {
		return s.fleetOps().Find().Resume(r.Context(), qs)
	}))
	s.HandleMutation("POST", "/bulk/retry-dead", auth.Operator, "bulk.retry_dead", s.bulk(func(r *Request, qs []string) (ops.BulkResult, error) {
		return s.fleetOps().Find().RetryDead(r.Context(), qs)
	}))
	s.HandleMutation("POST", "/bulk/purge-dead", auth.Admin, "bulk.purge_dead", s.bulk(func(r *Request, qs []string) (ops.BulkResult, error) {
		return s.fleetOps().Find().PurgeDead(r.Context(), qs)
	}))
	s.page("/running", "running", auth.Viewer, func(r *Request) (any, error) {
		run, err := s.fleetOps().Members().Running(r.Context())
		if err != nil {
			return nil, err
		}
		return runningPage{refreshing{5}, run}, nil
	})
}

type runningPage struct {
	refreshing
	ops.Running
}

// bulkAnswer is a bulk action's answer: what was selected and what was
// done. Its audit note (the selection and the count) goes into the one
// audit record of the action.
type bulkAnswer struct {
	ops.BulkResult
	Match  string `json:"match,omitempty"`
	Queues int    `json:"queues"`
}

func (b bulkAnswer) auditNote() string {
	sel := fmt.Sprintf("%d named queue(s)", b.Queues)
	if b.Match != "" {
		sel = fmt.Sprintf("match=%q", b.Match)
	}
	return fmt.Sprintf("selected %d queue(s) by %s; %s %d; failed %d; %d ms", b.Selected, sel, b.Action, b.Changed, b.Failed, b.Millis)
}

func (b bulkAnswer) flash() string {
	what := map[string]string{"pause": "Paused %d of %d queue(s)", "resume": "Resumed %d of %d queue(s)",
		"retry-dead": "Put back %d dead letter(s) of %d queue(s)", "purge-dead": "Purged %d dead letter(s) of %d queue(s)"}[b.Action]
	if what == "" {
		what = b.Action + ": %d of %d"
	}
	msg := fmt.Sprintf(what, b.Changed, b.Selected)
	if b.Match != "" {
		msg += fmt.Sprintf(" matching %q", b.Match)
	}
	msg += fmt.Sprintf(" in %d ms.", b.Millis)
	if b.Failed > 0 {
		msg += fmt.Sprintf(" %d queue(s) failed: %s", b.Failed, strings.Join(b.Errors, "; "))
	}
	return msg
}

// bulk wraps a bulk action: it reads the selection, checks it, acts.
func (s *Server) bulk(act func(r *Request, queues []string) (ops.BulkResult, error)) Handler {
	return func(r *Request) (any, error) {
		m := ops.Match(strings.TrimSpace(r.In.Get("match")))
		named, err := namedQueues(r)
		if err != nil {
			return nil, err
		}
		qs, err := s.fleetOps().Find().Select(r.Context(), m, named)
		if err != nil {
			return nil, err
		}
		res, err := act(r, qs)
		if err != nil {
			return nil, err
		}
		return bulkAnswer{BulkResult: res, Match: string(m), Queues: len(named)}, nil
	}
}

// namedQueues reads the queues named by hand: form fields "queue" (one per
// checked row), or "queues" as a JSON array or a comma-separated list.
func namedQueues(r *Request) ([]string, error) {
	var out []string
	if r.PostForm != nil {
		out = append(out, r.PostForm["queue"]...)
	}
	if v := strings.TrimSpace(r.In.Get("queues")); v != "" {
		if strings.HasPrefix(v, "[") {
			var list []string
			if err := json.Unmarshal([]byte(v), &list); err != nil {
				return nil, Errorf(http.StatusBadRequest, "queues: want a JSON array of names or a comma-separated list: %v", err)
			}
			out = append(out, list...)
		} else {
			for _, q := range strings.Split(v, ",") {
				if q = strings.TrimSpace(q); q != "" {
					out = append(out, q)
				}
			}
		}
	}
	return out, nil
}
