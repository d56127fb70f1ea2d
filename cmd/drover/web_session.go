package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/zksession"
	"github.com/drover-dev/drover/jobs"
	"github.com/drover-dev/drover/web"
)

// webSession is drover web's ZooKeeper session, renewed when ZooKeeper
// expires it (a blip longer than the session timeout) by the Keeper's
// Keep: the console keeps serving meanwhile, answering from Redis what it
// can and 503 (web.ErrZooKeeperDown) what needs ZooKeeper. Requests never
// wait for a connect: they use the session of the moment.
type webSession struct{ *zksession.Keeper }

// session returns the session now (connected or not).
func (w webSession) session() *coordinator.Session { return w.Current() }

// ready returns nil while the session is connected, else
// web.ErrZooKeeperDown with the session's state (or saying there has
// been none yet).
func (w webSession) ready() error {
	s := w.session()
	if s == nil {
		return fmt.Errorf("%w (no session yet)", web.ErrZooKeeperDown)
	}
	if st := s.State(); st != coordinator.Connected {
		return fmt.Errorf("%w (session %s)", web.ErrZooKeeperDown, st)
	}
	return nil
}

// webFleet is the job lookup's view of the fleet through the session of
// the moment. Without ZooKeeper it answers "no owner, nothing committed":
// a job's status is then read from Redis alone (done, failed, dead,
// delayed or revoked from their records; pending for one still in the
// log), and nothing is reported running.
type webFleet struct{ s webSession }

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

// QueuePause reads the queue's own pause flag; without ZooKeeper it
// answers none (a parked head then reads pending).
func (f webFleet) QueuePause(ctx context.Context, q string) (*drover.Pause, error) {
	if f.s.ready() != nil {
		return nil, nil
	}
	p, err := jobs.SessionFleet{Session: f.s.session()}.QueuePause(ctx, q)
	if err != nil && (errors.Is(err, drover.ErrSessionLost) || f.s.ready() != nil) {
		return nil, nil
	}
	return p, err
}
