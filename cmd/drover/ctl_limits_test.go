package main

import (
	"context"
	"strings"
	"testing"
)

// TestCtlPauseRefusesAnUnboundedReason: a reason past 1 KB, or holding a
// control or bidirectional character, is a usage error (exit 2) naming
// the flag and the limit, and nothing reaches ZooKeeper. (A 900 KB
// reason cannot be one argument: Linux caps one at 128 KB; the API test
// sends 900 KB.)
func TestCtlPauseRefusesAnUnboundedReason(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "p")
	c.fails(exitUsage, []string{"--reason: 100000 bytes, at most 1024 bytes (1 KB)"}, "ctl", "pause", "--queue", "p", "--reason", strings.Repeat("x", 100000))
	c.fails(exitUsage, []string{"--reason", "U+202E"}, "ctl", "pause", "--all", "--reason", "xss-\u202egnp.exe")
	c.fails(exitUsage, []string{"--reason", "U+000A"}, "ctl", "pause", "--member", "w9", "--reason", "two\nlines")
	ps, err := c.session().Pauses().Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ps.All != nil || len(ps.Queues) != 0 || len(ps.Members) != 0 {
		t.Fatalf("refused pauses: want no pause node written, have %+v", ps)
	}
	c.ok("ctl", "pause", "--queue", "p", "--reason", strings.Repeat("x", 1024)) // at the limit
	// A queue's tags (its labels) are bounded the same way.
	c.fails(exitUsage, []string{"--tag", "at most 128 bytes"}, "ctl", "queue", "create", "t1", "--tag", strings.Repeat("g", 129))
	c.fails(exitUsage, []string{"--tag", "U+202E"}, "ctl", "queue", "update", "p", "--tag", "gpu\u202e")
}
