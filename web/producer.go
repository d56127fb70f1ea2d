package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/metrics"
)

// handleProducer registers a producer endpoint (RouteJobs: enqueue,
// revoke) at APIPrefix+path: authenticated, role-checked, its body bounded
// and CSRF-checked for browser sessions as a mutation's, served without
// ZooKeeper, but not written to the audit log. Producers are programs
// sending work at their own rate, not operators steering the fleet (asynq,
// River and Sidekiq audit operators, not producers): an audit record per
// enqueue was a Redis round trip per request and let a busy producer push
// operators' records out of the log (docs/decisions.md, "Issue 42: one
// round trip per HTTP enqueue"). Each request is counted instead
// (producer_requests_total by action and status; enqueued_total by the
// queue's group for the messages written) and logged at debug. A refused
// request (no credentials, a lower role, a bad CSRF token) still goes to
// the refusal stream, as every surface's does.
func (s *Server) handleProducer(method, path string, need auth.Role, action string, h Handler) {
	s.mutations = append(s.mutations, method+" "+APIPrefix+path)
	s.mux.HandleFunc(method+" "+APIPrefix+path, func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.authenticate(w, r, action)
		if !ok {
			s.countProducer(action, http.StatusUnauthorized)
			return
		}
		r = r.WithContext(auth.WithPrincipal(r.Context(), p))
		v, _, err := s.call(w, r, p, need, h)
		status := http.StatusOK
		if _, ok := v.(Created); ok {
			status = http.StatusCreated
		}
		if err != nil {
			status = statusOf(err)
		}
		s.countProducer(action, status)
		if isRefusal(err) {
			s.auditRefusal(r, action, p, err)
		}
		if s.log.IsDebug() {
			s.log.Debug("producer request", "action", action, "target", strings.TrimPrefix(r.URL.Path, APIPrefix), "who", p.Name, "status", status, "error", err)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		respond(w, v)
	})
}

// countProducer counts one producer request by action and status.
func (s *Server) countProducer(action string, status int) {
	s.cfg.Metrics.IncrCounter(metrics.ProducerRequests, 1, metrics.L("action", action), metrics.L("status", strconv.Itoa(status)))
}
