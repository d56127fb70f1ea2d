package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryHoldsNoTooling: the drover binary `make build` ships imports
// nothing from tools/ or internal/testing/, the tree's two places for what
// is not the product (docs/decisions.md, "Issue 42: the tree shows product
// and tooling"). Only the benchmark build (-tags droverbench) may take
// tools/fleetbench's instruments.
func TestBinaryHoldsNoTooling(t *testing.T) {
	const module = "github.com/drover-dev/drover/"
	for _, tc := range []struct {
		tags    string
		allowed []string
	}{
		{"", nil},
		{"droverbench", []string{module + "tools/fleetbench"}},
	} {
		out, err := exec.Command("go", "list", "-tags", tc.tags, "-deps", ".").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags %q -deps: %v\n%s", tc.tags, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 50 {
			t.Fatalf("go list -tags %q -deps listed %d packages, expected the binary's whole graph:\n%s", tc.tags, len(deps), out)
		}
	deps:
		for _, dep := range deps {
			if !strings.HasPrefix(dep, module+"tools/") && !strings.HasPrefix(dep, module+"internal/testing/") {
				continue
			}
			for _, ok := range tc.allowed {
				if dep == ok {
					continue deps
				}
			}
			t.Errorf("the drover binary (tags %q) imports %s: tooling belongs outside the product", tc.tags, dep)
		}
	}
}
