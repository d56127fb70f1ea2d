package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
)

// maxReadRefusalsPerMinute bounds the audit records of refused reads (GET
// and HEAD) one server writes per minute, so that a page hammering the
// console cannot flood the audit log. Refused mutations are always
// recorded; the refused reads past the bound are counted, and the count is
// written with the next record.
const maxReadRefusalsPerMinute = 60

// auditTimeout bounds the write of one audit record, which runs after the
// request's own deadline may have passed.
const auditTimeout = 2 * time.Second

// recordAudit writes rec to the fleet's audit log for request r, within
// auditTimeout whether or not r's client is still there. A record that
// cannot be written is logged with what, not answered: the request's own
// outcome stands.
func (s *Server) recordAudit(r *http.Request, rec ops.AuditRecord, what string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditTimeout)
	defer cancel()
	if err := s.fleetOps().RecordAudit(ctx, rec); err != nil {
		s.log.Error(what+" not written", "action", rec.Action, "who", rec.Who, "error", err)
	}
}

// refusalLimit counts the refused reads recorded in the current minute.
type refusalLimit struct {
	mu         sync.Mutex
	minute     int64
	recorded   int
	suppressed int
}

// admit reports whether a refused read may be recorded now, and how many
// were suppressed since the last one recorded.
func (l *refusalLimit) admit(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := now.Unix() / 60; m != l.minute {
		l.minute, l.recorded = m, 0
	}
	if l.recorded >= maxReadRefusalsPerMinute {
		l.suppressed++
		return false, 0
	}
	l.recorded++
	n := l.suppressed
	l.suppressed = 0
	return true, n
}

// auditRefusal records a refused request in the audit log: action is the
// mutation's name, or "" for a read or a request refused before it was
// routed ("request.refused"). p is who was refused (zero when not
// authenticated).
func (s *Server) auditRefusal(r *http.Request, action string, p auth.Principal, err error) {
	now := s.cfg.Now()
	detail := "method=" + r.Method + " host=" + r.Host
	if o := r.Header.Get("Origin"); o != "" {
		detail += " origin=" + o
	}
	if action == "" {
		action = "request.refused"
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			ok, suppressed := s.refusals.admit(now)
			if !ok {
				return
			}
			if suppressed > 0 {
				detail += fmt.Sprintf(" (and %d refused reads not recorded)", suppressed)
			}
		}
	}
	who, role, via := p.Name, p.Role.String(), p.Via
	if who == "" {
		who, role, via = "anonymous", "none", "none"
	}
	rec := ops.AuditRecord{At: now.UTC(), Who: who, Role: role, Via: via, Remote: r.RemoteAddr, Action: action,
		Target: strings.TrimPrefix(r.URL.Path, APIPrefix), Detail: detail, Status: statusOf(err), Result: err.Error()}
	s.recordAudit(r, rec, "audit record of a refusal")
	s.log.Warn("refused", "action", action, "target", rec.Target, "status", rec.Status, "remote", r.RemoteAddr, "host", r.Host, "result", rec.Result)
}
