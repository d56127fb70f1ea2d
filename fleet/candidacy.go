package fleet

import (
	"context"
	"errors"
	"time"

	"github.com/drover-dev/drover/internal/clock"
	"github.com/hashicorp/go-hclog"
)

// DefaultCampaignRetry is the pause after a failed campaign.
const DefaultCampaignRetry = time.Second

// Candidacy is one candidate in one election for the life of a session:
// the single rule by which the rebalancer and the scheduler win their
// leadership terms. A campaign that fails while the session lives (a
// candidate node deleted under it, a timeout) is tried again after a pause;
// only the end of ctx or of the session ends the candidacy.
type Candidacy struct {
	Elector   Elector
	Candidate string
	Session   Lifetime
	// Retry is the pause after a failed campaign. Default
	// DefaultCampaignRetry.
	Retry  time.Duration
	Logger hclog.Logger
}

// Next blocks until this candidate leads and returns the leadership. It
// returns ctx's error when ctx ends first, or the session's (wrapping
// drover.ErrSessionLost) when the session is lost.
func (c *Candidacy) Next(ctx context.Context) (Leadership, error) {
	retry := c.Retry
	if retry <= 0 {
		retry = DefaultCampaignRetry
	}
	for {
		lead, err := c.Elector.Campaign(ctx, c.Candidate)
		if err == nil {
			return lead, nil
		}
		if end := firstErr(ctx.Err(), c.Session.Err()); end != nil {
			return nil, end
		}
		if c.Logger != nil {
			c.Logger.Warn("campaign failed; retrying", "error", err, "in", retry)
		}
		if !pause(ctx, c.Session, retry) {
			return nil, firstErr(ctx.Err(), c.Session.Err(), errors.New("candidacy ended"))
		}
	}
}

// SchedulerLeadership is scheduler.Leadership on a Candidacy: a term lasts
// while this candidate leads and its session is connected. It is not safe
// for concurrent use (the scheduler calls Lead from one goroutine).
type SchedulerLeadership struct {
	Candidacy *Candidacy
	lead      Leadership
	cancel    context.CancelFunc
}

// Lead blocks until the candidate leads with a connected session and
// returns the term's context. It returns an error only when ctx ends or the
// session is lost.
func (s *SchedulerLeadership) Lead(ctx context.Context) (context.Context, error) {
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
	for {
		if s.lead == nil || s.lead.Err() != nil {
			lead, err := s.Candidacy.Next(ctx)
			if err != nil {
				return nil, err
			}
			s.lead = lead
		}
		term, cancel, err := s.lead.Act(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			s.lead = nil // the leadership ended: campaign again
			continue
		}
		s.cancel = cancel
		return term, nil
	}
}

// Resign gives the leadership up (shutdown).
func (s *SchedulerLeadership) Resign() {
	if s.cancel != nil {
		s.cancel()
	}
	if s.lead != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.lead.Resign(ctx)
	}
}

// pause waits d unless ctx ends or the session is lost first; it reports
// whether the whole pause passed.
func pause(ctx context.Context, s Lifetime, d time.Duration) bool {
	return clock.SleepOrDone(ctx, d, s.Done())
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
