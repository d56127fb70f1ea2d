package drover_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// outsideClients are the client libraries of the outside systems, each with
// the one package of this module that may import it (DESIGN.md §2, "one
// package per outside system"; STYLE.md rule 2).
var outsideClients = map[string]string{
	"github.com/redis/go-redis/v9": "queue",
	"github.com/go-zookeeper/zk":   "coordinator",
}

// importRuleExempt are the trees the rule does not cover: test servers and
// probes, the chaos and benchmark tools (which reach into the servers to
// break and measure them), and the vendored client itself.
var importRuleExempt = []string{"internal/testing", "tools", "bench", "third_party"}

// TestOnlyTheOwningPackageImportsAnOutsideClient walks the module's non-test
// files: a command that named go-redis's client type (cmd/drover's ctl,
// found by reading) spread the Redis client's API past queue.
func TestOnlyTheOwningPackageImportsAnOutsideClient(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			for _, ex := range importRuleExempt {
				if path == ex {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		dir := filepath.ToSlash(filepath.Dir(path))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if owner, ok := outsideClients[p]; ok && dir != owner && !strings.HasPrefix(dir, owner+"/") {
				t.Errorf("%s imports %s: only package %s may (wrap what it needs there)", path, p, owner)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d files: the walk did not reach the module's packages", checked)
	}
}
