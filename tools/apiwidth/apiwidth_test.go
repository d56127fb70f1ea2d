package apiwidth

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// The packages held to the rule and the rule's bounds (docs/decisions.md,
// "Issue 42: ports sized by their consumer").
var (
	checked = []string{
		"github.com/drover-dev/drover/internal/ops",
		"github.com/drover-dev/drover/coordinator",
		"github.com/drover-dev/drover/queue",
		"github.com/drover-dev/drover/fleet",
		"github.com/drover-dev/drover/registrar",
	}
)

const (
	maxTypeMethods = 15 // a type past it does two jobs: cut it into roles
	maxPortMethods = 12 // a port past it asks more than one consumer needs
)

// TestNoTypeOrPortTooWide loads the packages' export data (what the
// compiler built, imports resolved, so an interface embedded from another
// package is counted in full) and reports every exported type with more
// than maxTypeMethods exported methods (of T and *T, promoted ones
// included: what `go doc -all` lists, and more where a field is embedded)
// and every exported interface with more than maxPortMethods.
func TestNoTypeOrPortTooWide(t *testing.T) {
	pkgs := load(t, checked...)
	var wide []string
	for _, path := range checked {
		wide = append(wide, tooWide(pkgs[path])...)
	}
	for _, w := range wide {
		t.Error(w)
	}
	for _, path := range checked {
		typ, port := widest(pkgs[path])
		t.Logf("%s: widest type %s, widest port %s", path, typ, port)
	}
	// The counter sees what it must: a package's known types are there.
	if n := methodCount(pkgs["github.com/drover-dev/drover/coordinator"], "Session"); n < 10 {
		t.Errorf("coordinator.Session: counted %d methods, want about 15: the counter is broken", n)
	}
}

// TestFleetDoesNotDependOnQueue: the fleet layer coordinates members and
// queues through ZooKeeper; Redis is the worker's and the registrar's
// (package registrar, wired from cmd/drover), so fleet builds without
// package queue, directly or not.
func TestFleetDoesNotDependOnQueue(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/drover-dev/drover/fleet").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 5 {
		t.Fatalf("go list -deps fleet: want its dependencies, have %q", deps)
	}
	for _, d := range deps {
		if d == "github.com/drover-dev/drover/queue" {
			t.Errorf("fleet depends on queue: want it out of fleet's dependencies (go list -deps ./fleet)")
		}
	}
}

// TestCounterSeesEmbeddingAndForeignPorts shows the counter catches what
// the rule forbids: a wide type, a wide port, methods promoted by an
// embedded field, and an interface embedded from another package.
func TestCounterSeesEmbeddingAndForeignPorts(t *testing.T) {
	src := "package p\nimport \"io\"\ntype Wide struct{}\n"
	for i := range maxTypeMethods + 1 {
		src += fmt.Sprintf("func (*Wide) M%d() {}\n", i)
	}
	src += "type Role struct{ *Wide }\n"
	src += "type Port interface{ io.ReadWriteCloser; io.Seeker; io.ReaderAt; io.WriterAt; io.ByteScanner; io.ByteWriter; io.RuneScanner; io.StringWriter; io.WriterTo }\n"
	src += "type Small interface{ io.Reader }\n"
	src += "type narrow struct{ *Wide }\n"
	pkg := check(t, src)
	got := strings.Join(tooWide(pkg), "\n")
	for _, want := range []string{"p.Wide:", "p.Role:", "p.Port:"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %s reported, have:\n%s", want, got)
		}
	}
	for _, not := range []string{"p.Small:", "p.narrow:"} {
		if strings.Contains(got, not) {
			t.Errorf("want %s not reported, have:\n%s", not, got)
		}
	}
}

// tooWide describes each exported type or interface of pkg past its bound.
func tooWide(pkg *types.Package) []string {
	var out []string
	for _, name := range pkg.Scope().Names() {
		tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
		if !ok || !tn.Exported() || tn.IsAlias() {
			continue
		}
		ms := exportedMethods(tn.Type())
		limit, what := maxTypeMethods, "type"
		if types.IsInterface(tn.Type()) {
			limit, what = maxPortMethods, "port"
		}
		if len(ms) > limit {
			out = append(out, fmt.Sprintf("%s.%s: %s with %d exported methods, want at most %d: %s",
				pkg.Name(), name, what, len(ms), limit, strings.Join(ms, ", ")))
		}
	}
	return out
}

// widest names pkg's exported type and interface with the most methods,
// with their counts ("-" when it has none).
func widest(pkg *types.Package) (typ, port string) {
	typ, port = "-", "-"
	var nt, np int
	for _, name := range pkg.Scope().Names() {
		tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
		if !ok || !tn.Exported() || tn.IsAlias() {
			continue
		}
		n := len(exportedMethods(tn.Type()))
		if types.IsInterface(tn.Type()) {
			if n > np {
				np, port = n, fmt.Sprintf("%s (%d)", name, n)
			}
		} else if n > nt {
			nt, typ = n, fmt.Sprintf("%s (%d)", name, n)
		}
	}
	return typ, port
}

func methodCount(pkg *types.Package, name string) int {
	tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
	if !ok {
		return 0
	}
	return len(exportedMethods(tn.Type()))
}

// exportedMethods lists the exported methods of T and *T (of T alone for
// an interface), sorted.
func exportedMethods(typ types.Type) []string {
	seen := map[string]bool{}
	for _, t := range []types.Type{typ, types.NewPointer(typ)} {
		if types.IsInterface(typ) && t != typ {
			continue
		}
		ms := types.NewMethodSet(t)
		for i := range ms.Len() {
			if m := ms.At(i).Obj(); m.Exported() {
				seen[m.Name()] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// load reads the export data of paths through `go list -export` (the
// build cache's, compiled when missing).
func load(t *testing.T, paths ...string) map[string]*types.Package {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to read export data: %v", err)
	}
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, paths...)
	cmd := exec.Command(goBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	export := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok && file != "" {
			export[path] = file
		}
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := export[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	}).(types.ImporterFrom)
	pkgs := map[string]*types.Package{}
	for _, p := range paths {
		pkg, err := imp.ImportFrom(p, "", 0)
		if err != nil {
			t.Fatalf("import %s: %v", p, err)
		}
		pkgs[p] = pkg
	}
	return pkgs
}

// check type-checks one file of source (imports from the standard
// library, through their export data).
func check(t *testing.T, src string) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	std := load(t, "io")
	conf := types.Config{Importer: importerFunc(func(path string) (*types.Package, error) {
		if p, ok := std[path]; ok {
			return p, nil
		}
		return nil, fmt.Errorf("%s: not loaded", path)
	})}
	pkg, err := conf.Check("p", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
