package web

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/drover-dev/drover"
)

// DefaultRequestTimeout bounds one request's work (Config.RequestTimeout).
const DefaultRequestTimeout = 5 * time.Second

// pingTimeout bounds the Redis ping that explains a failed request (and
// the request's own bound bounds it too: answerContext).
const pingTimeout = time.Second

// unavailable reports whether err says a backing service did not answer
// (a timeout, a refused or reset connection, a lost session) rather than
// that the request was wrong.
func unavailable(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, drover.ErrSessionLost) || errors.Is(err, ErrZooKeeperDown)
}

// ErrZooKeeperDown: the console has no ZooKeeper session now (it is
// reconnecting); what needs ZooKeeper is answered 503 until it is back.
var ErrZooKeeperDown = errors.New("ZooKeeper is not reachable (the console is reconnecting): this request needs it and is unavailable until the session is back (job status, and enqueues to queues Redis already lists, need only Redis)")

// explain turns an error saying that a backing service did not answer (or
// any error answered 5xx) into a 503 that names the service: Redis when it
// does not answer a ping, ZooKeeper when the session is not connected,
// both when both. Other errors are returned as they are.
//
// The ping runs within what is left of r's bound (answerContext), so that
// explaining never makes the answer later than the bound.
func (s *Server) explain(r *http.Request, err error) error {
	if he := matchDeadline(err); he != nil {
		return he
	}
	var he *httpError
	if err == nil || errors.As(err, &he) || (!unavailable(err) && statusOf(err) < 500) {
		return err
	}
	var redisDown string
	if s.cfg.RedisPing != nil {
		actx, acancel := s.answerContext(r)
		ctx, cancel := context.WithTimeout(actx, pingTimeout)
		perr := s.cfg.RedisPing(ctx)
		acancel()
		cancel()
		if perr != nil {
			redisDown = perr.Error()
		}
	}
	// ZooKeeper is named whenever the session is not connected, even when
	// the ping failed too: work that waited on a reconnecting session can
	// leave the ping too little of the bound to reach a Redis that is well,
	// and the 503 then said only "Redis" while ZooKeeper was what was down.
	// zkDown is what is said of ZooKeeper before err ("" when it is
	// connected, or when err says so itself).
	zkDown := ""
	if s.cfg.ZooKeeper != nil && !errors.Is(err, ErrZooKeeperDown) {
		if zerr := s.cfg.ZooKeeper(); zerr != nil {
			zkDown = zerr.Error()
			if !errors.Is(zerr, ErrZooKeeperDown) {
				zkDown = "ZooKeeper is not reachable (" + zkDown + ")"
			}
		}
	}
	switch {
	case zkDown != "" && redisDown != "":
		return &httpError{status: http.StatusServiceUnavailable, msg: zkDown + "; Redis did not answer a ping either (" + redisDown + "): " + err.Error()}
	case redisDown != "":
		return &httpError{status: http.StatusServiceUnavailable, msg: "Redis does not answer (" + redisDown + "): " + err.Error()}
	case zkDown != "":
		return &httpError{status: http.StatusServiceUnavailable, msg: zkDown + ": " + err.Error()}
	case errors.Is(err, ErrZooKeeperDown):
		return &httpError{status: http.StatusServiceUnavailable, msg: err.Error()}
	}
	if !unavailable(err) {
		return err
	}
	return &httpError{status: http.StatusServiceUnavailable, msg: "a backing service did not answer in time: " + err.Error()}
}

// bounded gives every request one deadline, Config.RequestTimeout from
// its arrival, by which it is answered whatever does not answer (issue
// 41: a frozen Redis was the bound, then a 1 s ping to name it, then a 2 s
// audit write). The handler's work (every Redis and ZooKeeper call of the
// request) gets the bound less answerReserve of it; what follows the work
// (the ping that names the service that did not answer, the audit record
// of a mutation or a refusal, the render) runs in what is left
// (answerContext). It wraps every other layer, refusals included.
func (s *Server) bounded(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answerBy := time.Now().Add(s.cfg.RequestTimeout)
		ctx := context.WithValue(r.Context(), answerByKey{}, answerBy)
		ctx, cancel := context.WithDeadline(ctx, answerBy.Add(-s.cfg.RequestTimeout/answerReserve))
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// answerReserve: the last 1/answerReserve of a request's bound is kept
// from its work for what follows it (bounded): 250 ms of the default 5 s,
// where a ping and an audit write to a Redis that answers take a few ms
// (and the work keeps 95% of the documented bound).
const answerReserve = 20

// answerByKey is the context key of a request's answer deadline (bounded).
type answerByKey struct{}

// answerContext returns a context that ends at r's answer deadline and
// not before, even when r's client has gone or r's work deadline passed:
// for what must follow the work (explaining a failure, writing an audit
// record). A request outside bounded (none in Handler) gets auditTimeout.
func (s *Server) answerContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(r.Context())
	if by, ok := r.Context().Value(answerByKey{}).(time.Time); ok {
		return context.WithDeadline(ctx, by)
	}
	return context.WithTimeout(ctx, auditTimeout)
}
