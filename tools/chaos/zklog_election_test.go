package main

import (
	"testing"
	"time"

	"github.com/drover-dev/drover/tools/chaos/check"
)

// The ensemble's own elections are read from its servers' logs: each loss
// of the leader (a follower's timed-out read, a leader without its quorum)
// up to the first server leading again is one zk-election, unless an
// injected fault took the leader away; the election at the ensemble's start
// is none.
func TestZooKeeperElectionsAreReadFromTheServersLogs(t *testing.T) {
	dir := t.TempDir()
	logs := map[string]string{
		"zookeeper/1/zookeeper.log": `2026-12-02T14:20:00.100+0000 [QuorumPeer[myid=1]] INFO org.apache.zookeeper.server.quorum.Learner - FOLLOWING - LEADER ELECTION TOOK - 212 MS
2026-12-02T14:23:44.770+0000 [QuorumPeer[myid=1]] WARN org.apache.zookeeper.server.quorum.Learner - Exception when following the leader
java.net.SocketTimeoutException: Read timed out
2026-12-02T14:23:46.149+0000 [QuorumPeer[myid=1]] INFO org.apache.zookeeper.server.quorum.Learner - FOLLOWING - LEADER ELECTION TOOK - 760 MS
2026-12-02T14:25:10.000+0000 [QuorumPeer[myid=1]] WARN org.apache.zookeeper.server.quorum.Learner - Exception when following the leader
`,
		"zookeeper/2/zookeeper.log": `2026-12-02T14:20:00.090+0000 [QuorumPeer[myid=2]] INFO org.apache.zookeeper.server.quorum.Leader - LEADING - LEADER ELECTION TOOK - 201 MS
2026-12-02T14:23:44.786+0000 [QuorumPeer[myid=2]] WARN org.apache.zookeeper.server.quorum.Learner - Exception when following the leader
2026-12-02T14:23:46.001+0000 [QuorumPeer[myid=2]] INFO org.apache.zookeeper.server.quorum.Leader - LEADING - LEADER ELECTION TOOK - 615 MS
`,
		"zookeeper/3/zookeeper.log": `2026-12-02T14:23:45.669+0000 [QuorumPeer[myid=3]] INFO org.apache.zookeeper.server.quorum.Leader - Shutdown called. For the reason Not sufficient followers synced, only synced with sids: [ [3] ]
`,
	}
	writeFiles(t, dir, logs)
	ts := func(s string) time.Time {
		v, err := time.Parse(zkLogTime, "2026-12-02T"+s+"+0000")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	got, err := zkElections(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []check.Fault{
		{Kind: check.ZKElection, Start: ts("14:23:44.770"), End: ts("14:23:46.001")},
		{Kind: check.ZKElection, Start: ts("14:25:10.000"), End: ts("14:26:10.000")}, // no leader in the log after it: a minute
	}
	if len(got) != len(want) {
		t.Fatalf("got %d elections (%+v), want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i].Kind != want[i].Kind || !got[i].Start.Equal(want[i].Start) || !got[i].End.Equal(want[i].End) {
			t.Fatalf("election %d: got %s %s–%s, want %s–%s", i, got[i].Kind, got[i].Start, got[i].End, want[i].Start, want[i].End)
		}
	}
	// An injected leader stop explains the first.
	injected := []check.Fault{{Kind: check.ZKLeaderStop, Start: ts("14:23:44.000"), End: ts("14:23:50.000")}}
	if got, err = zkElections(dir, injected); err != nil || len(got) != 1 || !got[0].Start.Equal(want[1].Start) {
		t.Fatalf("with the leader stop injected: got %+v (%v), want only the second election", got, err)
	}
}
