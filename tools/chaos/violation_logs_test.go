package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/drover-dev/drover/tools/chaos/check"
)

func TestViolationLogsCopyTheNamedQueuesLines(t *testing.T) {
	dir := t.TempDir()
	w2 := strings.Join([]string{
		`2026-11-30T19:42:04.000Z [INFO]  drover.worker: started: member=w2 queue=q12 id=m-1`,
		`2026-11-30T19:42:04.100Z [INFO]  drover.worker: started: member=w2 queue=q1 id=m-2`,
		`2026-11-30T19:42:04.200Z [INFO]  drover.worker: started: member=w2 queue=q120 id=m-3`,
		`2026-11-30T19:42:05.000Z [WARN]  drover.zk.coordinator: zookeeper session suspended: member=w2`,
		`2026-11-30T19:42:06.000Z [WARN]  drover.worker: queue lost: member=w2 queue=q12`,
		`2026-11-30T19:42:07.000Z [WARN]  drover.worker: other: member=w2 queue=q03`,
	}, "\n") + "\n"
	writeFiles(t, dir, map[string]string{"w2.log": w2, "s1.log": "queue=q12 scheduler line\n"})
	vs := []check.Violation{
		{Invariant: "duplicate-outside-fault", Detail: "q12/m-1 ran 2 times"},
		{Invariant: "duplicate-outside-fault", Detail: "q12/m-4 ran 2 times"},
	}
	var out bytes.Buffer
	if err := violationLogs(&out, dir, vs); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"--- w2.log: 3 lines about q12", "queue=q12 id=m-1", "session suspended", "queue lost: member=w2 queue=q12"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in the copied lines, have:\n%s", want, got)
		}
	}
	for _, not := range []string{"queue=q1 ", "queue=q120", "queue=q03", "scheduler line"} {
		if strings.Contains(got, not) {
			t.Errorf("want no %q in the copied lines, have:\n%s", not, got)
		}
	}
}

// A queue moved while no worker reached Redis names no queue; the
// leader's and the Redis probes' lines are what say why (a CI run failed
// with this violation and printed no line at all).
func TestViolationLogsCopyThePlacementLinesForAMoveWithoutRedis(t *testing.T) {
	dir := t.TempDir()
	w1 := strings.Join([]string{
		`2026-12-02T05:27:27.000Z [WARN]  drover.redis: Redis has not answered; giving this member's queues up to the members that reach it: member=w1`,
		`2026-12-02T05:27:30.000Z [WARN]  drover.rebalance: members that cannot reach Redis get no queues: election=rebalance member=w1 members=["w2"]`,
		`2026-12-02T05:27:31.000Z [INFO]  drover.worker: started: member=w1 queue=q12 id=m-1`,
	}, "\n") + "\n"
	writeFiles(t, dir, map[string]string{"w1.log": w1})
	vs := []check.Violation{{Invariant: check.MovedWithoutRedis, Detail: "13 queue(s) changed owner during the cut of every worker from Redis at 05:27:23"}}
	var out bytes.Buffer
	if err := violationLogs(&out, dir, vs); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"--- w1.log: 2 lines about placement and Redis health", "drover.redis: Redis has not answered", "get no queues"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in the copied lines, have:\n%s", want, got)
		}
	}
	if strings.Contains(got, "queue=q12") {
		t.Errorf("want no task lines, have:\n%s", got)
	}
}
