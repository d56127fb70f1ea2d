package main

import (
	"strings"
	"testing"
)

// A deployment is at rest only when its replica holds every write the
// master had taken: a link that is up is not enough (the replica may still
// be applying the writes the master buffered during a full resync).
func TestAReplicaBehindItsMasterIsNotAtRest(t *testing.T) {
	master := "# Replication\r\nrole:master\r\nconnected_slaves:1\r\nslave0:ip=127.0.0.1,port=6380,state=online,offset=900,lag=0\r\nmaster_repl_offset:1000\r\n"
	replica := "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:6379\r\nmaster_link_status:up\r\nslave_repl_offset:900\r\n"
	if got := infoField(master, "master_repl_offset"); got != "1000" {
		t.Fatalf("master_repl_offset = %q, want 1000", got)
	}
	if got := infoField(replica, "master_link_status"); got != "up" {
		t.Fatalf("master_link_status = %q, want up", got)
	}
	why := caughtUp(infoField(master, "master_repl_offset"), infoField(replica, "slave_repl_offset"))
	if !strings.Contains(why, "100 bytes behind") {
		t.Fatalf("a replica 100 bytes behind: %q, want it named as behind", why)
	}
	for _, c := range []struct{ master, replica string }{{"1000", "1000"}, {"1000", "1200"}} {
		if why := caughtUp(c.master, c.replica); why != "" {
			t.Fatalf("caughtUp(%s, %s) = %q, want at rest", c.master, c.replica, why)
		}
	}
	if why := caughtUp("", "5"); why == "" {
		t.Fatal("a master without an offset counted as caught up")
	}
}
