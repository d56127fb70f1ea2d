// Package e2e runs the built drover binary against real Redis and ZooKeeper:
// worker fleets as separate processes, killed and signalled like in
// production.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/worker/executor"
)

// droverBin is the binary under test, built once by TestMain.
var droverBin string

func TestMain(m *testing.M) {
	executor.RunChildIfRequested() // the Go-child benchmark re-executes this binary
	dir, err := os.MkdirTemp("", "drover-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	droverBin = filepath.Join(dir, "drover")
	build := exec.Command("go", "build", "-o", droverBin, "../cmd/drover")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build drover:", err)
		os.Exit(1)
	}
	code := testenv.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}
