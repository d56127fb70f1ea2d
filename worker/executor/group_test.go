package executor

import (
	"testing"
	"time"
)

// The reason of a task stopped by SIGTERM names why, the group and whether
// SIGKILL followed, in the same words for a per-task process and a pooled
// child.
func TestStopReason(t *testing.T) {
	deadline := time.Date(2030, 6, 3, 4, 5, 6, 700, time.UTC)
	tests := []struct {
		name    string
		timeout time.Duration
		outcome Outcome
		group   string
		forced  bool
		want    string
	}{
		{"cancelled", 0, OutcomeCancelled, processGroup, false,
			"cancelled: sent SIGTERM to its process group"},
		{"cancelled, then killed", time.Minute, OutcomeCancelled, pooledGroup, true,
			"cancelled: sent SIGTERM to its pooled child's process group, then SIGKILL after 1.5s"},
		{"deadline", 0, OutcomeTimeout, processGroup, false,
			"timed out at 2030-06-03T04:05:06.0000007Z: sent SIGTERM to its process group"},
		{"timeout, then killed", 90 * time.Second, OutcomeTimeout, pooledGroup, true,
			"timed out at 2030-06-03T04:05:06.0000007Z (timeout 1m30s): sent SIGTERM to its pooled child's process group, then SIGKILL after 1.5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := &Task{Timeout: tt.timeout}
			if have := stopReason(task, tt.outcome, deadline, tt.group, tt.forced, 1500*time.Millisecond); have != tt.want {
				t.Errorf("want %q, have %q", tt.want, have)
			}
		})
	}
}
