package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
)

// Refused requests go to the refusal stream (ops.AuditLog.RecordRefusals), apart
// from the audit log of mutations: anyone can be refused, so a flood of
// refusals must neither evict a mutation nor grow Redis. Per source (who
// was refused and from which address) and per minute, a server records
// the first refusalSamples in full and counts the rest; when the minute
// is over it writes one record with the count ("N refusals from X in the
// minute from 10:04"). The per-minute table holds at most
// maxRefusalSources sources; the refusals of sources past it are counted
// together, under otherSources.
const (
	refusalSamples    = 10
	maxRefusalSources = 1000
	otherSources      = "other sources"
	// refusalResultBytes bounds a refusal's result (the error, which may
	// quote the Host sent).
	refusalResultBytes = 512
)

// auditTimeout bounds the write of audit records made outside a request
// (Run's flush of refusal counts).
const auditTimeout = 2 * time.Second

// recordAudit writes rec to the fleet's audit log for request r, within
// what is left of r's bound whether or not r's client is still there
// (answerContext). A record that cannot be written is logged with what,
// not answered: the request's own outcome stands.
func (s *Server) recordAudit(r *http.Request, rec ops.AuditRecord, what string) {
	ctx, cancel := s.answerContext(r)
	defer cancel()
	if err := ops.WriteAudit(ctx, s.cfg.Store.Operator(), rec, s.cfg.Now); err != nil {
		s.log.Error(what+" not written", "action", rec.Action, "who", rec.Who, "error", err)
	}
}

// refusalSampler counts one server's refusals per source in the current
// minute.
type refusalSampler struct {
	mu      sync.Mutex
	minute  int64 // unix minute of the counts
	sources map[string]*refusalCount
}

// refusalCount is one source's refusals in the minute.
type refusalCount struct {
	who, role, via, remote string
	n                      int
	last                   ops.AuditRecord // the latest refusal, for the count's record
}

// admit counts rec (a refusal of source at now) and reports whether it is
// to be recorded in full. due are the count records of the minute that
// ended, when now is in a later one.
func (l *refusalSampler) admit(now time.Time, source string, rec ops.AuditRecord) (sample bool, due []ops.AuditRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	due = l.rollLocked(now)
	if l.sources == nil {
		l.sources = map[string]*refusalCount{}
	}
	c := l.sources[source]
	if c == nil {
		if len(l.sources) >= maxRefusalSources {
			source = otherSources
			rec.Who, rec.Role, rec.Via, rec.Remote = otherSources, "", "", ""
		}
		if c = l.sources[source]; c == nil {
			c = &refusalCount{who: rec.Who, role: rec.Role, via: rec.Via, remote: rec.Remote}
			l.sources[source] = c
		}
	}
	c.n++
	c.last = rec
	return c.n <= refusalSamples, due
}

// flush returns the count records of the minute that ended, when now is in
// a later one (Run calls it on every sample tick).
func (l *refusalSampler) flush(now time.Time) []ops.AuditRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rollLocked(now)
}

func (l *refusalSampler) rollLocked(now time.Time) []ops.AuditRecord {
	m := now.Unix() / 60
	if m == l.minute {
		return nil
	}
	var due []ops.AuditRecord
	from := time.Unix(l.minute*60, 0).UTC()
	for source, c := range l.sources {
		if c.n <= refusalSamples {
			continue // every one is recorded already
		}
		due = append(due, ops.AuditRecord{At: from.Add(time.Minute), Who: c.who, Role: c.role, Via: c.via, Remote: c.remote,
			Action: "refusals", Target: c.last.Target, Status: c.last.Status,
			Detail: fmt.Sprintf("%d refusals from %s in the minute from %s (the first %d recorded one by one; the last: %s %s)",
				c.n, source, from.Format("15:04 UTC"), refusalSamples, c.last.Action, c.last.Target),
			Result: c.last.Result})
	}
	l.minute, l.sources = m, nil
	return due
}

// sourceOf names who was refused from where: "anonymous@192.0.2.7" (the
// client's address without its port: each connection has another).
func sourceOf(rec ops.AuditRecord) string {
	host, _, err := net.SplitHostPort(rec.Remote)
	if err != nil {
		host = rec.Remote
	}
	return drover.ClipText(rec.Who, drover.MaxAuditFieldBytes) + "@" + drover.ClipText(host, drover.MaxAuditFieldBytes)
}

// auditRefusal records a refused request in the refusal stream: action is
// the mutation's name, or "" for a read or a request refused before it was
// routed ("request.refused"). p is who was refused (zero when not
// authenticated). What the client sent (Host, Origin, User-Agent) is kept
// to drover.MaxAuditFieldBytes each.
func (s *Server) auditRefusal(r *http.Request, action string, p auth.Principal, err error) {
	if action == "" {
		action = "request.refused"
	}
	host := drover.ClipText(r.Host, drover.MaxAuditFieldBytes)
	detail := "method=" + drover.ClipText(r.Method, 16) + " host=" + host
	for _, h := range []string{"Origin", "User-Agent"} {
		if v := r.Header.Get(h); v != "" {
			detail += " " + strings.ToLower(h) + "=" + drover.ClipText(v, drover.MaxAuditFieldBytes)
		}
	}
	who, role, via := p.Name, p.Role.String(), p.Via
	if who == "" {
		who, role, via = "anonymous", "none", "none"
	}
	rec := ops.AuditRecord{At: s.cfg.Now().UTC(), Who: who, Role: role, Via: via, Remote: r.RemoteAddr, Action: action,
		Target: drover.ClipText(strings.TrimPrefix(r.URL.Path, APIPrefix), drover.MaxAuditFieldBytes), Detail: detail,
		Status: statusOf(err), Result: drover.ClipText(err.Error(), refusalResultBytes)}
	s.recordRefusal(r, rec)
}

// recordRefusal counts rec and writes it to the refusal stream when it is
// one of its source's samples, with the count records of a minute that
// ended; only what is written is logged, so a flood floods neither Redis
// nor the log.
func (s *Server) recordRefusal(r *http.Request, rec ops.AuditRecord) {
	sample, due := s.refusals.admit(s.cfg.Now(), sourceOf(rec), rec)
	if sample {
		due = append(due, rec)
		s.log.Warn("refused", "action", rec.Action, "target", rec.Target, "status", rec.Status, "remote", rec.Remote, "result", rec.Result)
	}
	if len(due) == 0 {
		return
	}
	ctx, cancel := s.answerContext(r)
	defer cancel()
	s.writeRefusals(ctx, due)
}

// flushRefusals writes the count records of a minute that ended (Run).
func (s *Server) flushRefusals(ctx context.Context) {
	recs := s.refusals.flush(s.cfg.Now())
	if len(recs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, auditTimeout)
	defer cancel()
	s.writeRefusals(ctx, recs)
}

// writeRefusals writes recs within ctx (a request's answerContext, or
// auditTimeout from Run).
func (s *Server) writeRefusals(ctx context.Context, recs []ops.AuditRecord) {
	for _, rec := range recs {
		if rec.Action == "refusals" {
			s.log.Warn("refusals", "detail", rec.Detail)
		}
	}
	if err := ops.WriteRefusals(ctx, s.cfg.Store.Operator(), s.cfg.Now, recs...); err != nil {
		s.log.Error("refusal records not written", "records", len(recs), "error", err)
	}
}

// isRefusal reports whether err refused the request for who sent it (a
// role too low, a CSRF check failed) rather than for what it asked.
func isRefusal(err error) bool {
	var he *httpError
	return errors.As(err, &he) && he.refusal
}
