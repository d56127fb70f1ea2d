package main

import (
	"strings"
	"testing"
)

// A server whose log says its data tree no longer matches a transaction is
// named, with that line; a server without one is not.
func TestEnsembleDivergenceReadFromTheServersLogs(t *testing.T) {
	dir := t.TempDir()
	logs := map[string]string{
		"zookeeper/1/zookeeper.log": "2026-11-30T21:03:00.000+0000 [main] INFO  org.apache.zookeeper.server.quorum.QuorumPeer - LEADING\n",
		"zookeeper/3/zookeeper.log": "2026-11-30T21:03:31.450+0000 [main] INFO  org.apache.zookeeper.server.persistence.FileTxnSnapLog - Snapshot loaded\n" +
			"2026-11-30T21:03:34.653+0000 [CommitProcessor:3] ERROR org.apache.zookeeper.server.DataTree - First digest mismatch on txn: 216175529167290368,0,25769803777,1796072614498,-10\n" +
			"2026-11-30T21:03:35.000+0000 [CommitProcessor:3] ERROR org.apache.zookeeper.server.DataTree - First digest mismatch on txn: 1,0,2,3,-10\n",
	}
	writeFiles(t, dir, logs)
	got, err := ensembleDivergence(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "server 3: ") || !strings.Contains(got[0], "216175529167290368") {
		t.Fatalf("want server 3 named once with its first mismatch, have %q", got)
	}
}

// A worker's log line saying its session found the server disagreeing is
// reported with the worker's name; other lines and other files are not.
func TestSessionMovesReadFromTheWorkersLogs(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"w1.log": "2026-12-01T03:00:00.000Z [INFO]  worker: claimed: queue=q1\n",
		"w2.log": "2026-12-01T03:00:01.000Z [INFO]  worker: claimed: queue=q2\n" +
			"2026-12-01T03:00:02.000Z [ERROR] worker.coordinator: the ZooKeeper server disagrees with the ensemble's leader on a node's version (its data tree diverged: check its log for \"digest mismatch\" and restore it from a healthy member); moving the session to the next server: node=/c/offsets/q7 \"version read\"=3 server=127.0.0.1:2181\n",
		"zookeeper/1/zookeeper.log": "disagrees with the ensemble's leader\n",
	})
	got, err := sessionMoves(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "w2: ") || !strings.Contains(got[0], "/c/offsets/q7") {
		t.Fatalf("want w2's one line, have %q", got)
	}
}
