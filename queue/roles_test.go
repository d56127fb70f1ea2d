package queue

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// maxRoleMethods is the most exported methods an exported type of this
// package may have (docs/decisions.md, "queue.Store by role (issue 32)"):
// past it, a type holds more than one role.
const maxRoleMethods = 15

// TestNoTypeHoldsTooManyRoles counts, for every exported type T of the
// package's own source (tests left out), the exported methods of T and *T
// together, promoted ones included: what `go doc -all` lists.
func TestNoTypeHoldsTooManyRoles(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatalf("parse the package: %v", err)
	}
	var files []*ast.File
	for _, f := range pkgs["queue"].Files {
		files = append(files, f)
	}
	methods := exportedMethods(t, fset, files)
	for _, name := range []string{"Store", "Log", "Producer", "Dead", "Inspector"} {
		if _, ok := methods[name]; !ok {
			t.Errorf("type %s: want it among the package's types", name)
		}
	}
	var names []string
	for name := range methods {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if n := len(methods[name]); n > maxRoleMethods {
			t.Errorf("type %s: want at most %d exported methods, have %d: split it by role", name, maxRoleMethods, n)
		}
	}
	// The Log role is the worker's store port (worker/): exactly these.
	want := []string{"Backlog", "BacklogMany", "CheckQueues", "DeadLetter", "PromoteDueNext", "QueueHeads",
		"ReadAfter", "ReadMany", "Retry", "RouteWakeups", "Trim", "TrimMany", "TrimRecording"}
	if have := methods["Log"]; !slices.Equal(have, want) {
		t.Errorf("Log's methods: want %v, have %v", want, have)
	}
}

// TestMethodCountSeesPromotion checks the counter itself: methods promoted
// by embedding count, value and pointer receivers count once each,
// unexported methods and unexported types do not.
func TestMethodCountSeesPromotion(t *testing.T) {
	const src = `package p
type inner struct{}
func (inner) Hidden() {}
func (*inner) Also() {}
func (inner) private() {}
type Outer struct{ *inner }
func (Outer) Own() {}
func (*Outer) Mine() {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	methods := exportedMethods(t, fset, []*ast.File{f})
	want := map[string][]string{"Outer": {"Also", "Hidden", "Mine", "Own"}}
	if len(methods) != 1 || !slices.Equal(methods["Outer"], want["Outer"]) {
		t.Fatalf("methods: want %v, have %v", want, methods)
	}
}

// exportedMethods type-checks files as one package and returns, for each
// exported type it declares (aliases left out), the sorted exported methods
// of the type and of a pointer to it, promoted ones included. Imports are
// not loaded (fast, no build): a type may not embed one from another
// package, whose methods would go uncounted.
func exportedMethods(t *testing.T, fset *token.FileSet, files []*ast.File) map[string][]string {
	t.Helper()
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			st, ok := n.(*ast.StructType)
			if !ok {
				return true
			}
			for _, fld := range st.Fields.List {
				typ := fld.Type
				if star, ok := typ.(*ast.StarExpr); ok {
					typ = star.X
				}
				if _, ok := typ.(*ast.SelectorExpr); ok && fld.Names == nil {
					t.Errorf("%s: a struct embeds a type of another package: its promoted methods would go uncounted", fset.Position(fld.Pos()))
				}
			}
			return true
		})
	}
	conf := types.Config{
		Importer: importerFunc(func(path string) (*types.Package, error) {
			pkg := types.NewPackage(path, path[strings.LastIndex(path, "/")+1:])
			pkg.MarkComplete()
			return pkg, nil
		}),
		Error: func(error) {}, // the names of unloaded imports do not resolve
	}
	pkg, _ := conf.Check(files[0].Name.Name, fset, files, nil)
	out := map[string][]string{}
	for _, name := range pkg.Scope().Names() {
		tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
		if !ok || !tn.Exported() || tn.IsAlias() {
			continue
		}
		seen := map[string]bool{}
		for _, typ := range []types.Type{tn.Type(), types.NewPointer(tn.Type())} {
			ms := types.NewMethodSet(typ)
			for i := range ms.Len() {
				if m := ms.At(i).Obj(); m.Exported() {
					seen[m.Name()] = true
				}
			}
		}
		names := []string{}
		for m := range seen {
			names = append(names, m)
		}
		sort.Strings(names)
		out[name] = names
	}
	return out
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
