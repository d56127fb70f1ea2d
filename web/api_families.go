package web

import (
	"fmt"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/auth"
)

// routeFamiliesAPI serves queue families (docs/http-api.md, "Queue
// families"): list, show, create or replace, remove. The mutations are
// admin-only and audited like queue configurations (HandleMutation),
// refusals included.
func (s *Server) routeFamiliesAPI() {
	s.HandleAPI("GET", "/families", auth.Viewer, func(r *Request) (any, error) {
		return s.familyViews(r)
	})
	s.HandleAPI("GET", "/families/{family}", auth.Viewer, func(r *Request) (any, error) {
		f, err := s.fleetOps().Families().Get(r.Context(), r.PathValue("family"))
		if err != nil && f.Err == nil {
			return nil, err
		}
		return familyViewOf(f.Config, f.Version, f.Err), nil
	})
	s.HandleMutation("PUT", "/families/{family}", auth.Admin, "family.set", func(r *Request) (any, error) {
		var f drover.FamilyConfig
		version, err := decodePut(r, "queue family", "family", "version", &f, &f.Name)
		if err != nil {
			return nil, err
		}
		if version < 0 {
			nv, err := s.fleetOps().Families().Set(r.Context(), f, version)
			if err != nil {
				return nil, err
			}
			return Created{map[string]any{"family": f.Name, "version": nv}}, nil
		}
		c, err := s.fleetOps().Families().Replace(r.Context(), f, version)
		if err != nil {
			return nil, err
		}
		return familyReplaced{Family: f.Name, Version: c.Version, QueuesUpdated: c.Updated, QueuesKept: c.Kept}, nil
	})
	s.HandleMutation("DELETE", "/families/{family}", auth.Admin, "family.delete", func(r *Request) (any, error) {
		if err := s.fleetOps().Families().Delete(r.Context(), r.PathValue("family")); err != nil {
			return nil, err
		}
		return map[string]any{"family": r.PathValue("family"), "deleted": true}, nil
	})
}

// familyReplaced answers a replace: the family's new version and what
// became of its registered queues (docs/http-api.md, "Queue families").
// The counts go into the audit record.
type familyReplaced struct {
	Family        string `json:"family"`
	Version       int32  `json:"version"`
	QueuesUpdated int    `json:"queues_updated"`
	QueuesKept    int    `json:"queues_kept"`
}

func (a familyReplaced) auditNote() string {
	return fmt.Sprintf("queues_updated=%d queues_kept=%d", a.QueuesUpdated, a.QueuesKept)
}

// familyView is a family as the API shows it.
type familyView struct {
	drover.FamilyConfig
	Version int32  `json:"version"`
	Error   string `json:"error,omitempty"`
}

func familyViewOf(f drover.FamilyConfig, version int32, err error) familyView {
	v := familyView{FamilyConfig: f, Version: version}
	if err != nil {
		v.Error = err.Error()
	}
	return v
}

// routeFamiliesPage serves the console's families page (/families): every
// family with its prefix and the queue settings people look for.
func (s *Server) routeFamiliesPage() {
	s.page("/families", "families", auth.Viewer, func(r *Request) (any, error) {
		return s.familyViews(r)
	})
}

// familyViews lists every family as the API and the page show it.
func (s *Server) familyViews(r *Request) ([]familyView, error) {
	fams, err := s.fleetOps().Families().List(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]familyView, 0, len(fams))
	for _, f := range fams {
		out = append(out, familyViewOf(f.Config, f.Version, f.Err))
	}
	return out, nil
}
