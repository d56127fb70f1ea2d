package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// fakeContact is a session as the lease's renewal rule sees it.
type fakeContact struct {
	err     error
	heard   time.Time
	timeout time.Duration
}

func (c *fakeContact) Err() error                    { return c.err }
func (c *fakeContact) LastHeard() time.Time          { return c.heard }
func (c *fakeContact) SessionTimeout() time.Duration { return c.timeout }

// The task lease's renewal rule on a fake clock: a renewal needs a live
// session that heard from ZooKeeper less than T/2 ago; at exactly
// LastHeard + T/2 it is refused (docs/semantics.md: a renewal at r means the
// server heard from us after r − T/2).
func TestLeaseRenewerRenewsOnlyWithinHalfTheSessionTimeout(t *testing.T) {
	const T = 9 * time.Second
	heard := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	lost := fmt.Errorf("fake: %w", drover.ErrSessionLost)
	for _, tc := range []struct {
		name    string
		session *fakeContact // nil: between sessions
		now     time.Time
		renew   bool
	}{
		{"just heard", &fakeContact{heard: heard, timeout: T}, heard, true},
		{"a nanosecond before T/2", &fakeContact{heard: heard, timeout: T}, heard.Add(T/2 - time.Nanosecond), true},
		{"at T/2", &fakeContact{heard: heard, timeout: T}, heard.Add(T / 2), false},
		{"after T/2", &fakeContact{heard: heard, timeout: T}, heard.Add(T/2 + time.Millisecond), false},
		{"lost, though heard just now", &fakeContact{err: lost, heard: heard, timeout: T}, heard, false},
		{"between sessions", nil, heard, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testkit.NewClock(tc.now)
			renewals := 0
			renew, err := LeaseRenewer(LeaseRenewerConfig{
				Session: func() Contact {
					if tc.session == nil {
						return nil
					}
					return tc.session
				},
				Renew: func() error { renewals++; return nil },
				Now:   clock.Now,
			})
			if err != nil {
				t.Fatal(err)
			}
			renew()
			if want := map[bool]int{true: 1, false: 0}[tc.renew]; renewals != want {
				t.Fatalf("want %d renewals, have %d", want, renewals)
			}
		})
	}
}

// A failed renewal is logged once, however often it fails, and the next
// call still tries.
func TestLeaseRenewerKeepsTryingAfterAFailedRenewal(t *testing.T) {
	now := time.Unix(1000, 0)
	s := &fakeContact{heard: now, timeout: time.Second}
	tries := 0
	renew, err := LeaseRenewer(LeaseRenewerConfig{
		Session: func() Contact { return s },
		Renew:   func() error { tries++; return errors.New("supervisor gone") },
		Now:     func() time.Time { return now },
		Logger:  testkit.Logger(t, hclog.Off),
	})
	if err != nil {
		t.Fatal(err)
	}
	renew()
	renew()
	if tries != 2 {
		t.Fatalf("want 2 tries, have %d", tries)
	}
}

func TestLeaseRenewerWantsSessionAndRenew(t *testing.T) {
	if _, err := LeaseRenewer(LeaseRenewerConfig{Renew: func() error { return nil }}); !errors.Is(err, drover.ErrInvalidConfig) {
		t.Fatalf("no Session: want ErrInvalidConfig, have %v", err)
	}
}

// Defect (issue 42): the worker reached the session through
// Member.Session(), a *coordinator.Session, which is nil on any other
// Connect, so on fakes the lease was never renewed and a queue could not
// park. The worker now goes through the member's Current, which holds
// whatever session the member serves: on a fake connect the lease is
// renewed while the session is heard from, parking writes through the
// session, and both follow the member to its next session.
func TestTheWorkersViewOfTheSessionWorksOnAFakeConnect(t *testing.T) {
	c := newFakeConnector()
	mr := startMember(t, c)
	s := mr.session(t)
	clock := testkit.NewClock(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC))
	s.hear(clock.Now())
	renewals := 0
	renew, err := LeaseRenewer(LeaseRenewerConfig{Session: mr.cur.Contact, Renew: func() error { renewals++; return nil }, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	renew()
	if renewals != 1 {
		t.Fatalf("a live fake session heard from now: want 1 renewal, have %d", renewals)
	}
	clock.Advance(fakeSessionTimeout / 2)
	renew()
	if renewals != 1 {
		t.Fatalf("renewed at LastHeard + T/2: %d renewals", renewals)
	}
	if err := mr.cur.Confirm(context.Background()); err != nil {
		t.Fatalf("confirm a live session: %v", err)
	}
	if err := mr.cur.SetPause(context.Background(), drover.PauseQueue, "orders", drover.Pause{}); err != nil {
		t.Fatalf("park through a live session: %v", err)
	}
	if have, want := s.pauseWrites(), []string{"queues/orders"}; !slices.Equal(have, want) {
		t.Fatalf("want pause writes %v, have %v", want, have)
	}

	s.expire() // the member aborts its queues and serves a new session
	s2 := mr.session(t)
	renew()
	if renewals != 1 {
		t.Fatalf("renewed through a session not heard from yet: %d renewals", renewals)
	}
	s2.hear(clock.Now())
	renew()
	if renewals != 2 {
		t.Fatalf("the new session heard from now: want 2 renewals, have %d", renewals)
	}
}

// LeaseRenewer on a real session: not between sessions, not after the
// session ended.
func TestLeaseRenewerRenewsOnlyThroughALiveSession(t *testing.T) {
	s := connect(t, testenv.ZooKeeper(t).Addrs, testenv.Chroot(t))
	var current Contact
	renewals := 0
	renew, err := LeaseRenewer(LeaseRenewerConfig{Session: func() Contact { return current }, Renew: func() error { renewals++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	renew() // between sessions
	if renewals != 0 {
		t.Fatalf("renewed with no session: %d renewals", renewals)
	}
	current = s
	renew()
	if renewals != 1 {
		t.Fatalf("a live session: want 1 renewal, have %d", renewals)
	}
	s.Close()
	renew()
	if renewals != 1 {
		t.Fatalf("renewed through a closed session: %d renewals", renewals)
	}
}
