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
