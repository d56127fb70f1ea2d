package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/jobs"
	"github.com/drover-dev/drover/web"
)

// webSession is drover web's ZooKeeper session, renewed when ZooKeeper
// expires it (a blip longer than the session timeout), as a worker's is:
// the console keeps serving meanwhile, answering from Redis what it can
// and 503 (web.ErrZooKeeperDown) what needs ZooKeeper.
type webSession struct {
	cfg coordinator.Config
	log hclog.Logger
	// renewed is called with every new session (not the first).
	renewed func(*coordinator.Session)
	cur     atomic.Pointer[coordinator.Session]
}

// Retry bounds of webSession.run's reconnection.
const (
	webReconnectMin = 250 * time.Millisecond
	webReconnectMax = 5 * time.Second
)

// session returns the session now (connected or not).
func (w *webSession) session() *coordinator.Session { return w.cur.Load() }

// ready returns nil while the session is connected, else
// web.ErrZooKeeperDown with the session's state.
func (w *webSession) ready() error {
	if st := w.session().State(); st != coordinator.Connected {
		return fmt.Errorf("%w (session %s)", web.ErrZooKeeperDown, st)
	}
	return nil
}

// run renews the session each time it ends, until ctx ends; it closes
// the last session before returning.
func (w *webSession) run(ctx context.Context) error {
	defer func() { w.session().Close() }()
	for {
		old := w.session()
		select {
		case <-ctx.Done():
			return nil
		case <-old.Done():
		}
		w.log.Warn("ZooKeeper session lost: reconnecting; pages that need ZooKeeper answer 503 meanwhile", "error", old.Err())
		wait := webReconnectMin
		for {
			cctx, cancel := context.WithTimeout(ctx, w.cfg.SessionTimeout+5*time.Second)
			s, err := coordinator.Connect(cctx, w.cfg)
			cancel()
			if err == nil {
				w.cur.Store(s)
				old.Close()
				w.renewed(s)
				w.log.Info("ZooKeeper session renewed")
				break
			}
			if ctx.Err() != nil {
				return nil
			}
			w.log.Warn("reconnect to ZooKeeper", "error", err, "retry_in", wait)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
			wait = min(2*wait, webReconnectMax)
		}
	}
}

// webFleet is the job lookup's view of the fleet through the session of
// the moment. Without ZooKeeper it answers "no owner, nothing committed":
// a job's status is then read from Redis alone (done, failed, dead,
// delayed or revoked from their records; pending for one still in the
// log), and nothing is reported running.
type webFleet struct{ s *webSession }

var _ jobs.Fleet = webFleet{}

func (f webFleet) QueueOwner(ctx context.Context, q string) (jobs.Owner, error) {
	if f.s.ready() != nil {
		return jobs.Owner{}, nil
	}
	o, err := jobs.SessionFleet{Session: f.s.session()}.QueueOwner(ctx, q)
	if err != nil && (errors.Is(err, drover.ErrSessionLost) || f.s.ready() != nil) {
		return jobs.Owner{}, nil
	}
	return o, err
}
