package adapt

import (
	"context"
	"os"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// A scheduler candidate whose candidate node vanishes while it waits (an
// operator's delete, a server-side glitch) must keep campaigning while its
// session lives: a campaign error is not the end of the candidacy.
func TestSchedulerCandidacySurvivesACampaignError(t *testing.T) {
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func() *coordinator.Session {
		s, err := coordinator.Connect(ctx, coordinator.Config{Servers: server.Addrs, Root: root, SessionTimeout: 4 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s1, s2 := connect(), connect()
	el1, _ := s1.Election(coordinator.ElectionScheduler)
	el2, _ := s2.Election(coordinator.ElectionScheduler)
	first := &ElectionLeadership{Election: el1, Candidate: "a"}
	if _, err := first.Lead(ctx); err != nil {
		t.Fatal(err)
	}
	second := &ElectionLeadership{Election: el2, Candidate: "b"}
	type result struct {
		term context.Context
		err  error
	}
	led := make(chan result, 1)
	go func() { term, err := second.Lead(ctx); led <- result{term, err} }()

	raw, _, err := zk.Connect(server.Addrs, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	dir := root + "/election/" + coordinator.ElectionScheduler
	leader, err := el1.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var waiting string
	for waiting == "" && ctx.Err() == nil { // until the second candidate's node exists
		names, _, err := raw.Children(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if n != path.Base(leader.Node) {
				waiting = dir + "/" + n
			}
		}
	}
	if err := raw.Delete(waiting, -1); err != nil {
		t.Fatal(err)
	}
	first.Resign()

	select {
	case r := <-led:
		if r.err != nil {
			t.Fatalf("want the second candidate to lead after the first resigned, have Lead error: %v", r.err)
		}
	case <-ctx.Done():
		t.Fatal("want the second candidate to lead after the first resigned, have no leader")
	}
}
