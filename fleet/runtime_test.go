package fleet

import (
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testenv"
)

// LeaseRenewer renews only through a live session that heard from
// ZooKeeper lately: not between sessions, not after the session ended.
func TestLeaseRenewerRenewsOnlyThroughALiveSession(t *testing.T) {
	s := connect(t, testenv.ZooKeeper(t).Addrs, testenv.Chroot(t))
	var current *coordinator.Session
	renewals := 0
	renew := LeaseRenewer(func() *coordinator.Session { return current }, func() error { renewals++; return nil }, hclog.NewNullLogger())

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
