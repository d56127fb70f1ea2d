package metrics_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/drover-dev/drover/metrics"
)

// Every catalogued (and so documented) metric but the aggregates must be
// recorded somewhere in the product: a Recorder call (IncrCounter, SetGauge,
// AddSample) whose first argument is the metric's constant. A metric nobody emits is a
// dashboard panel that stays empty.
func TestEveryCatalogedMetricIsEmitted(t *testing.T) {
	consts := constNames(t, "names.go") // value → constant name
	emitted := map[string][]string{}    // constant name → where
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "bench", "testdata", "examples", "e2e", "deploy", "docs":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			fn, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (fn.Sel.Name != "IncrCounter" && fn.Sel.Name != "SetGauge" && fn.Sel.Name != "AddSample") {
				return true
			}
			if arg, ok := call.Args[0].(*ast.SelectorExpr); ok {
				if pkg, ok := arg.X.(*ast.Ident); ok && pkg.Name == "metrics" {
					emitted[arg.Sel.Name] = append(emitted[arg.Sel.Name], fset.Position(call.Pos()).String())
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range metrics.Catalog() {
		if d.Aggregate {
			continue // computed at each scrape from the Detail gauges
		}
		name, ok := consts[d.Name]
		if !ok {
			t.Errorf("catalog metric %s has no constant in names.go", d.Name)
			continue
		}
		if len(emitted[name]) == 0 {
			t.Errorf("catalog metric %s (metrics.%s) is never recorded: want a Recorder call with it, have none", d.Name, name)
		}
	}
}

// constNames maps the string constants of a file to their names.
func constNames(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						out[v] = id.Name
					}
				}
			}
		}
	}
	return out
}
