package fleetbench

import (
	"os"
	"path/filepath"
	"testing"
)

// sessionEvents counts a window's suspensions and losses from where the
// last count stopped, leaves a partial last line for the next, and does
// not count a session the worker closed itself.
func TestSessionEventsCountFromWhereTheLastStopped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w1.log")
	first := "2026-11-30T16:00:00Z [WARN]  drover.zk.coordinator: zookeeper session suspended: member=w1\n" +
		"2026-11-30T16:00:01Z [INFO]  drover.zk.coordinator: zookeeper session connected: member=w1\n"
	if err := os.WriteFile(path, []byte(first+"2026-11-30T16:00:02Z [WARN]  drover.zk.coord"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, l, next, err := sessionEvents(path, 0)
	if err != nil || s != 1 || l != 0 || next != int64(len(first)) {
		t.Fatalf("first window: want 1 suspension, 0 losses, next %d; have %d, %d, %d, %v", len(first), s, l, next, err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("inator: zookeeper session lost: member=w1\n" +
		"2026-11-30T16:00:03Z [WARN]  drover.zk.coordinator: zookeeper session suspended: member=w1\n" +
		"2026-11-30T16:00:04Z [WARN]  drover.zk.coordinator: zookeeper session lost: member=w1 reason=\"the session was closed\"\n")
	f.Close()
	s, l, _, err = sessionEvents(path, next)
	if err != nil || s != 1 || l != 1 {
		t.Fatalf("second window: want 1 suspension and 1 loss, have %d, %d, %v", s, l, err)
	}
}
