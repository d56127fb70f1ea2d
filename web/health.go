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

// pingTimeout bounds the Redis ping that explains a failed request.
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
// does not answer a ping, else ZooKeeper when the session is not
// connected. Other errors are returned as they are.
func (s *Server) explain(err error) error {
	if he := matchDeadline(err); he != nil {
		return he
	}
	var he *httpError
	if err == nil || errors.As(err, &he) || (!unavailable(err) && statusOf(err) < 500) {
		return err
	}
	if s.cfg.RedisPing != nil {
		ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
		perr := s.cfg.RedisPing(ctx)
		cancel()
		if perr != nil {
			return &httpError{status: http.StatusServiceUnavailable, msg: "Redis does not answer (" + perr.Error() + "): " + err.Error()}
		}
	}
	if errors.Is(err, ErrZooKeeperDown) {
		return &httpError{status: http.StatusServiceUnavailable, msg: err.Error()}
	}
	if s.cfg.ZooKeeper != nil {
		if zerr := s.cfg.ZooKeeper(); zerr != nil {
			msg := zerr.Error()
			if !errors.Is(zerr, ErrZooKeeperDown) {
				msg = "ZooKeeper is not reachable (" + msg + ")"
			}
			return &httpError{status: http.StatusServiceUnavailable, msg: msg + ": " + err.Error()}
		}
	}
	if !unavailable(err) {
		return err
	}
	return &httpError{status: http.StatusServiceUnavailable, msg: "a backing service did not answer in time: " + err.Error()}
}

// bounded gives every request a deadline of Config.RequestTimeout, so that
// a Redis that does not answer is a 503 within that bound rather than a
// wait for every command's own timeout in turn.
func (s *Server) bounded(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
