package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/queue"
)

// TestCommittedScriptsMatchGo: the Lua (and the rules) the Python and
// Node clients carry are the Go code's. After changing a script or a rule
// in queue/, run `go run ./tools/pyscripts` from the module root.
func TestCommittedScriptsMatchGo(t *testing.T) {
	root := filepath.Join("..", "..")
	want, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range OutDirs {
		for name, body := range want {
			have, err := os.ReadFile(filepath.Join(root, dir, name))
			if err != nil {
				t.Errorf("%s/%s: %v (run: go run ./tools/pyscripts)", dir, name, err)
				continue
			}
			if string(have) != body {
				t.Errorf("%s/%s differs from the Go source; run: go run ./tools/pyscripts", dir, name)
			}
		}
	}
}

// TestGenerateEvaluatesConcatenation: record-outcomes is built from a
// shared function and a literal; the generated script holds both.
func TestGenerateEvaluatesConcatenation(t *testing.T) {
	files, err := Generate(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	rec := files["record_outcomes.lua"]
	if len(rec) < 100 || !strings.HasPrefix(rec, "-- drover record-outcomes") {
		t.Fatalf("record_outcomes.lua: %.80q", rec)
	}
	if !strings.Contains(rec, "local function rotate") {
		t.Fatal("record_outcomes.lua lacks the shared record function")
	}
}

// TestLayoutVersionIsTheEnqueueScripts: the version the fleet writes to
// <prefix>:layout is the one the Python client speaks.
func TestLayoutVersionIsTheEnqueueScripts(t *testing.T) {
	files, err := Generate(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`"layout": %d`, queue.LayoutVersion)
	if !strings.Contains(files["versions.json"], want) {
		t.Fatalf("versions.json lacks %s (queue.LayoutVersion):\n%s", want, files["versions.json"])
	}
}
