package main

import (
	"testing"
	"time"

	"github.com/drover-dev/drover/tools/chaos/check"
)

// Two Sentinels' logs of three switches: one Sentinel made on its own
// after a restart outlasted down-after, one back a few seconds later (its
// window reaches back to the first: the server promoted had been catching
// up since), and one inside an injected sentinel fault (that fault's own).
func TestFailoversReadFromTheSentinelLogs(t *testing.T) {
	dir := t.TempDir()
	logs := map[string]string{
		"sentinel-1/sentinel.log": `10753:X 30 Nov 2026 20:38:41.107 # oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo
10753:X 30 Nov 2026 20:41:43.478 # +sdown master drover-chaos 127.0.0.1 38009
10753:X 30 Nov 2026 20:41:43.547 # +odown master drover-chaos 127.0.0.1 38009 #quorum 2/2
10753:X 30 Nov 2026 20:41:44.211 # +switch-master drover-chaos 127.0.0.1 38009 127.0.0.1 38659
10753:X 30 Nov 2026 20:42:03.380 # +switch-master drover-chaos 127.0.0.1 38659 127.0.0.1 38009
10753:X 30 Nov 2026 20:42:27.348 # +odown master drover-chaos 127.0.0.1 38009 #quorum 2/2
10753:X 30 Nov 2026 20:42:28.948 # +switch-master drover-chaos 127.0.0.1 38009 127.0.0.1 38659
`,
		"sentinel-2/sentinel.log": `10759:X 30 Nov 2026 20:41:44.269 # +switch-master drover-chaos 127.0.0.1 38009 127.0.0.1 38659
10759:X 30 Nov 2026 20:42:02.670 # +odown master drover-chaos 127.0.0.1 38659 #quorum 2/2
10759:X 30 Nov 2026 20:42:03.518 # +switch-master drover-chaos 127.0.0.1 38659 127.0.0.1 38009
`,
	}
	writeFiles(t, dir, logs)
	ts := func(s string) time.Time {
		at, err := time.ParseInLocation(sentinelLogTime, "30 Nov 2026 "+s, time.Local)
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	injected := []check.Fault{{Kind: check.Sentinel, Start: ts("20:42:20.000"), End: ts("20:42:50.000")}}
	got, err := failovers(dir, 2*time.Second, injected)
	if err != nil {
		t.Fatal(err)
	}
	want := []check.Fault{
		{Kind: check.Failover, Target: "redis 127.0.0.1:38659", Start: ts("20:41:41.547"), End: ts("20:41:44.269")},
		{Kind: check.Failover, Target: "redis 127.0.0.1:38009", Start: ts("20:41:44.269"), End: ts("20:42:03.518")},
	}
	if len(got) != len(want) {
		t.Fatalf("want %d failovers, have %d: %+v", len(want), len(got), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Kind != w.Kind || g.Target != w.Target || !g.Start.Equal(w.Start) || !g.End.Equal(w.End) {
			t.Errorf("failover %d: want %s %s %s–%s, have %s %s %s–%s", i, w.Kind, w.Target, w.Start.Format(time.TimeOnly+".000"), w.End.Format(time.TimeOnly+".000"),
				g.Kind, g.Target, g.Start.Format(time.TimeOnly+".000"), g.End.Format(time.TimeOnly+".000"))
		}
	}
}

// A switch back to the master the previous switch replaced reaches back to
// that switch however long ago it was: the server has been a replica only
// since, perhaps resyncing all along (a chaos run's was restarted for 52 s
// and promoted back 61 s after the first switch).
func TestAFailoverBackToTheDemotedMasterReachesBackToItsDemotion(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"sentinel-1/sentinel.log": `8454:X 02 Dec 2026 15:36:08.700 # +odown master drover-chaos 127.0.0.1 42181 #quorum 2/2
8454:X 02 Dec 2026 15:36:09.789 # +switch-master drover-chaos 127.0.0.1 42181 127.0.0.1 36705
8454:X 02 Dec 2026 15:37:09.900 # +odown master drover-chaos 127.0.0.1 36705 #quorum 2/2
8454:X 02 Dec 2026 15:37:10.803 # +switch-master drover-chaos 127.0.0.1 36705 127.0.0.1 42181
`,
	})
	ts := func(s string) time.Time {
		at, err := time.ParseInLocation(sentinelLogTime, "02 Dec 2026 "+s, time.Local)
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	got, err := failovers(dir, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[1].Start.Equal(ts("15:36:09.789")) || !got[1].End.Equal(ts("15:37:10.803")) {
		t.Fatalf("want the second failover's window from the first switch (15:36:09.789) to 15:37:10.803, have %+v", got)
	}
}
