package examples_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/drover-dev/drover"
)

// A queue under a family runs from its first enqueue by the Python client
// (examples/enqueue.py, the documented Lua script): no queue create.
func TestPythonFirstEnqueueRunsAFamilyQueue(t *testing.T) {
	needPython(t)
	f := newFleet(t)
	done := filepath.Join(f.dir, "ran")
	fam := drover.FamilyConfig{Name: "py-customers", Prefix: "pyc-",
		Queue: drover.QueueConfig{Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/usr/bin/touch", done}}}}}
	if err := f.zk.Families().Create(context.Background(), fam); err != nil {
		t.Fatal(err)
	}
	f.start("worker-1", []string{"worker"})
	cmd := exec.Command(python, "enqueue.py", "pyc-42", "hello")
	cmd.Env = append(os.Environ(), "REDIS_URL=redis://"+f.redis+"/0", "DROVER_PREFIX="+f.prefix)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("enqueue.py: %v\n%s", err, out)
	}
	waitFor(t, "the first message of pyc-42 to run", func() bool { _, err := os.Stat(done); return err == nil })
	e, err := f.zk.Queues().Get(context.Background(), "pyc-42")
	if err != nil || e.Config.Family != "py-customers" {
		t.Fatalf("pyc-42: want registered by family py-customers, have %+v, %v", e.Config, err)
	}
}
