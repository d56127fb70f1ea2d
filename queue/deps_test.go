package queue

import (
	"os/exec"
	"strings"
	"testing"
)

// A program that only enqueues links the queue package: it must not pull in
// the scheduler, its cron parser, the metrics library or the time zone
// database.
func TestQueueLinksNoSchedulerOrMetrics(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/drover-dev/drover/scheduler", "github.com/robfig/cron", "github.com/hashicorp/go-metrics", "time/tzdata"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("queue depends on %s", dep)
			}
		}
	}
}
