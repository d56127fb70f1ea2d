package web

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/scheduler"
)

// queryInts reads integer query parameters (queryInt) and keeps the first
// error: once a parameter is not a whole number, err says so and the later
// reads return 0.
type queryInts struct {
	r   *Request
	err error
}

func (q *queryInts) get(name string, def int) int {
	if q.err != nil {
		return 0
	}
	n, err := queryInt(q.r, name, def)
	q.err = err
	return n
}

// queryInt reads an integer query parameter; "" is def.
func queryInt(r *Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, Errorf(http.StatusBadRequest, "%s %q: want a whole number", name, v)
	}
	return n, nil
}

// queueQuery reads the queues listing's query parameters.
func queueQuery(r *Request) (ops.QueueQuery, error) {
	q := ops.QueueQuery{Filter: r.URL.Query().Get("filter"), Sort: r.URL.Query().Get("sort"), Only: r.URL.Query().Get("only")}
	switch o := r.URL.Query().Get("order"); o {
	case "", "asc":
	case "desc":
		q.Desc = true
	default:
		return q, Errorf(http.StatusBadRequest, "order %q: want asc or desc", o)
	}
	// The views of many queues: the top lagging, oldest, failing, paused.
	switch v := r.URL.Query().Get("view"); v {
	case "":
	case "lagging":
		q.Sort, q.Desc, q.Only = "lag", true, "lagging"
	case "oldest":
		q.Sort, q.Desc, q.Only = "age", true, "lagging"
	case "failing":
		q.Sort, q.Desc, q.Only = "dead", true, "dead"
	case "paused":
		q.Only = "paused"
	default:
		return q, Errorf(http.StatusBadRequest, "view %q: want lagging, oldest, failing or paused", v)
	}
	in := queryInts{r: r}
	q.Page, q.PerPage = in.get("page", 1), in.get("per_page", 100)
	if in.err != nil {
		return q, in.err
	}
	return q, q.Validate()
}

// routeAPI registers /api/v1: every page's data and every action.
func (s *Server) routeAPI() {
	s.HandleAPI("GET", "/whoami", auth.Viewer, func(r *Request) (any, error) {
		return map[string]string{"name": r.Principal.Name, "role": r.Principal.Role.String(), "via": r.Principal.Via}, nil
	})
	s.HandleAPI("GET", "/overview", auth.Viewer, func(r *Request) (any, error) {
		snap, err := s.snapshot(r.Request)
		if err != nil {
			return nil, err
		}
		return s.overview(snap), nil
	})
	s.HandleAPI("GET", "/queues", auth.Viewer, func(r *Request) (any, error) {
		q, err := queueQuery(r)
		if err != nil {
			return nil, err
		}
		snap, err := s.snapshot(r.Request)
		if err != nil {
			return nil, err
		}
		return snap.Select(q)
	})
	s.HandleAPI("GET", "/queues/{queue}", auth.Viewer, func(r *Request) (any, error) {
		return s.fleetOps().Queues().Queue(r.Context(), r.PathValue("queue"))
	})
	s.HandleAPI("GET", "/queues/{queue}/pending", auth.Viewer, func(r *Request) (any, error) {
		in := queryInts{r: r}
		after, limit := in.get("after", 0), in.get("limit", 50)
		if in.err != nil {
			return nil, in.err
		}
		return s.fleetOps().Messages().Pending(r.Context(), r.PathValue("queue"), drover.Position(after), limit)
	})
	s.HandleAPI("GET", "/queues/{queue}/delayed", auth.Viewer, func(r *Request) (any, error) {
		offset, limit, err := paging(r)
		if err != nil {
			return nil, err
		}
		return s.fleetOps().Messages().Delayed(r.Context(), r.PathValue("queue"), offset, limit)
	})
	s.HandleAPI("GET", "/queues/{queue}/dead", auth.Viewer, func(r *Request) (any, error) {
		offset, limit, err := paging(r)
		if err != nil {
			return nil, err
		}
		return s.fleetOps().Messages().Dead(r.Context(), r.PathValue("queue"), offset, limit)
	})
	s.HandleAPI("GET", "/queues/{queue}/messages/{id}", auth.Viewer, func(r *Request) (any, error) {
		return s.fleetOps().Messages().Message(r.Context(), r.PathValue("queue"), r.PathValue("id"))
	})
	s.HandleAPI("GET", "/members", auth.Viewer, func(r *Request) (any, error) {
		snap, err := s.snapshot(r.Request)
		if err != nil {
			return nil, err
		}
		return snap.Members, nil
	})
	s.HandleAPI("GET", "/members/{member}", auth.Viewer, func(r *Request) (any, error) {
		return s.fleetOps().Members().State(r.Context(), r.PathValue("member"))
	})
	s.HandleAPI("GET", "/schedules", auth.Viewer, func(r *Request) (any, error) {
		return s.fleetOps().Schedules().List(r.Context())
	})
	s.HandleAPI("GET", "/schedules/{name}", auth.Viewer, func(r *Request) (any, error) {
		return s.fleetOps().Schedules().Get(r.Context(), r.PathValue("name"))
	})
	s.HandleAPI("GET", "/audit", auth.Viewer, func(r *Request) (any, error) {
		offset, limit, err := paging(r)
		if err != nil {
			return nil, err
		}
		return s.fleetOps().Audit().Records(r.Context(), offset, limit)
	})
	s.HandleAPI("GET", "/audit/refusals", auth.Viewer, func(r *Request) (any, error) {
		offset, limit, err := paging(r)
		if err != nil {
			return nil, err
		}
		return s.fleetOps().Audit().Refusals(r.Context(), offset, limit)
	})

	// Operator actions.
	pause := func(scope drover.PauseScope, name func(*Request) string) Handler {
		return func(r *Request) (any, error) {
			n := name(r)
			if err := s.fleetOps().Queues().Pause(r.Context(), scope, n, r.Principal.Name, r.In.Get("reason")); err != nil {
				return nil, err
			}
			return map[string]any{"scope": scope, "name": n, "paused": true, "reason": r.In.Get("reason")}, nil
		}
	}
	resume := func(scope drover.PauseScope, name func(*Request) string) Handler {
		return func(r *Request) (any, error) {
			n := name(r)
			if err := s.fleetOps().Queues().Resume(r.Context(), scope, n); err != nil {
				return nil, err
			}
			return map[string]any{"scope": scope, "name": n, "paused": false}, nil
		}
	}
	queueName := func(r *Request) string { return r.PathValue("queue") }
	memberName := func(r *Request) string { return r.PathValue("member") }
	none := func(*Request) string { return "" }
	s.HandleMutation("POST", "/queues/{queue}/pause", auth.Operator, "queue.pause", pause(drover.PauseQueue, queueName))
	s.HandleMutation("POST", "/queues/{queue}/resume", auth.Operator, "queue.resume", resume(drover.PauseQueue, queueName))
	s.HandleMutation("POST", "/members/{member}/pause", auth.Operator, "member.pause", pause(drover.PauseMember, memberName))
	s.HandleMutation("POST", "/members/{member}/resume", auth.Operator, "member.resume", resume(drover.PauseMember, memberName))
	s.HandleMutation("POST", "/pause", auth.Operator, "all.pause", pause(drover.PauseAll, none))
	s.HandleMutation("POST", "/resume", auth.Operator, "all.resume", resume(drover.PauseAll, none))
	s.HandleMutation("POST", "/queues/{queue}/delayed/{id}/revoke", auth.Operator, "delayed.revoke", func(r *Request) (any, error) {
		if err := s.fleetOps().Messages().Revoke(r.Context(), r.PathValue("queue"), r.PathValue("id"), r.Principal.Name); err != nil {
			return nil, err
		}
		return map[string]any{"id": r.PathValue("id"), "revoked": true}, nil
	})
	s.HandleMutation("POST", "/queues/{queue}/delayed/{id}/run", auth.Operator, "delayed.run_now", func(r *Request) (any, error) {
		pos, err := s.fleetOps().Messages().RunNow(r.Context(), r.PathValue("queue"), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return map[string]any{"id": r.PathValue("id"), "position": pos}, nil
	})
	s.HandleMutation("POST", "/queues/{queue}/dead/{id}/retry", auth.Operator, "dead.retry", func(r *Request) (any, error) {
		pos, err := s.fleetOps().Messages().RetryDead(r.Context(), r.PathValue("queue"), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return map[string]any{"id": r.PathValue("id"), "position": pos}, nil
	})
	s.HandleMutation("POST", "/schedules/{name}/enable", auth.Operator, "schedule.enable", func(r *Request) (any, error) {
		return map[string]any{"name": r.PathValue("name"), "enabled": true}, s.fleetOps().Schedules().SetEnabled(r.Context(), r.PathValue("name"), true)
	})
	s.HandleMutation("POST", "/schedules/{name}/disable", auth.Operator, "schedule.disable", func(r *Request) (any, error) {
		return map[string]any{"name": r.PathValue("name"), "enabled": false}, s.fleetOps().Schedules().SetEnabled(r.Context(), r.PathValue("name"), false)
	})
	s.HandleMutation("POST", "/schedules/{name}/trigger", auth.Operator, "schedule.trigger", func(r *Request) (any, error) {
		res, err := s.fleetOps().Schedules().Trigger(r.Context(), r.PathValue("name"))
		if err != nil {
			return nil, err
		}
		return map[string]any{"name": r.PathValue("name"), "id": res.ID, "position": res.Position}, nil
	})
	s.HandleMutation("PUT", "/schedules/{name}", auth.Operator, "schedule.put", func(r *Request) (any, error) {
		var def scheduler.Definition
		if err := json.Unmarshal(r.Body, &def); err != nil {
			return nil, Errorf(http.StatusBadRequest, "schedule definition: %v", err)
		}
		if def.Name != r.PathValue("name") {
			return nil, Errorf(http.StatusBadRequest, "schedule definition: name %q differs from the path's %q", def.Name, r.PathValue("name"))
		}
		if err := s.fleetOps().Schedules().Put(r.Context(), def); err != nil {
			return nil, err
		}
		return s.fleetOps().Schedules().Get(r.Context(), def.Name)
	})
	s.HandleMutation("DELETE", "/schedules/{name}", auth.Operator, "schedule.remove", func(r *Request) (any, error) {
		return map[string]any{"name": r.PathValue("name"), "removed": true}, s.fleetOps().Schedules().Remove(r.Context(), r.PathValue("name"))
	})

	// Admin actions.
	s.HandleMutation("POST", "/queues/{queue}/dead/{id}/purge", auth.Admin, "dead.purge", func(r *Request) (any, error) {
		n, err := s.fleetOps().Messages().PurgeDead(r.Context(), r.PathValue("queue"), r.PathValue("id"))
		return map[string]any{"purged": n}, err
	})
	s.HandleMutation("POST", "/queues/{queue}/dead/purge", auth.Admin, "dead.purge_all", func(r *Request) (any, error) {
		n, err := s.fleetOps().Messages().PurgeDead(r.Context(), r.PathValue("queue"), "")
		return map[string]any{"purged": n}, err
	})
	s.HandleMutation("POST", "/queues/{queue}/offset", auth.Admin, "offset.reset", func(r *Request) (any, error) {
		target, err := ops.ParseResetTarget(r.In.Get("to"))
		if err != nil {
			return nil, err
		}
		dry, err := r.In.Bool("dry_run")
		if err != nil {
			return nil, Errorf(http.StatusBadRequest, "dry_run %q: want true or false", r.In.Get("dry_run"))
		}
		return s.fleetOps().Queues().ResetOffset(r.Context(), r.PathValue("queue"), target, r.Principal.Name, dry)
	})
	s.HandleMutation("PUT", "/queues/{queue}/config", auth.Admin, "queue.config", func(r *Request) (any, error) {
		var cfg drover.QueueConfig
		version, err := decodePut(r, "queue configuration", "queue", "config_version", &cfg, &cfg.Name)
		if err != nil {
			return nil, err
		}
		nv, err := s.fleetOps().Queues().SetConfig(r.Context(), cfg, version)
		if err != nil {
			return nil, err
		}
		return map[string]any{"queue": cfg.Name, "config_version": nv}, nil
	})
	s.HandleMutation("DELETE", "/queues/{queue}/config", auth.Admin, "queue.delete", func(r *Request) (any, error) {
		return map[string]any{"queue": r.PathValue("queue"), "deleted": true}, s.fleetOps().Queues().DeleteConfig(r.Context(), r.PathValue("queue"))
	})
	s.routeParkedAPI()   // api_parked.go
	s.routeCancelAPI()   // api_cancel.go
	s.routeFamiliesAPI() // api_families.go
}

// paging reads ?offset= (default 0) and ?limit= (default 50).
func paging(r *Request) (offset, limit int, err error) {
	in := queryInts{r: r}
	offset, limit = in.get("offset", 0), in.get("limit", 50)
	return offset, limit, in.err
}

// decodeNamed decodes r's JSON body into v (unknown fields refused) for a
// PUT of the object the path names by param: *name, empty in the body,
// takes the path's; a different one is refused. what names the object in
// the errors.
func decodeNamed(r *Request, what, param string, v any, name *string) error {
	dec := json.NewDecoder(strings.NewReader(string(r.Body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf(http.StatusBadRequest, "%s: %v", what, err)
	}
	if *name == "" {
		*name = r.PathValue(param)
	}
	if *name != r.PathValue(param) {
		return Errorf(http.StatusBadRequest, "%s: name %q differs from the path's %q", what, *name, r.PathValue(param))
	}
	return nil
}

// decodePut reads a versioned PUT of the object the path names by param:
// its body into v (decodeNamed) and the version it replaces (versionParam;
// versionField is the GET's field that holds it).
func decodePut(r *Request, what, param, versionField string, v any, name *string) (int32, error) {
	if err := decodeNamed(r, what, param, v, name); err != nil {
		return 0, err
	}
	return versionParam(r, versionField)
}

// versionParam reads the ?version= of a versioned write: -1 without one
// (create), else the version read from GET (its field, for the error).
func versionParam(r *Request, field string) (int32, error) {
	v := r.URL.Query().Get("version")
	if v == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return 0, Errorf(http.StatusBadRequest, "version %q: want the version read from GET (%s)", v, field)
	}
	return int32(n), nil
}
