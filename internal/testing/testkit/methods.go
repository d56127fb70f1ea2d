package testkit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// PackageSources reads the Go files of dir, tests left out, as file name →
// source: what ExportedMethods counts.
func PackageSources(dir string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	srcs := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		srcs[filepath.Base(f)] = string(b)
	}
	return srcs, nil
}

// ExportedMethods type-checks srcs (file name → Go source of one package)
// and returns, for each exported type it declares (aliases left out), the
// sorted exported methods of the type and of a pointer to it, promoted
// ones included: what `go doc -all` lists. Imports are not loaded (fast,
// no build), so a type embedded from another package cannot be looked
// into: it counts as one method, "(methods of embedded pkg.T)", so that it
// cannot pass unseen. The rule "no exported type over 15 methods" of
// coordinator and queue (issue 32) is held with it.
func ExportedMethods(srcs map[string]string) (map[string][]string, error) {
	fset := token.NewFileSet()
	names := make([]string, 0, len(srcs))
	for n := range srcs {
		names = append(names, n)
	}
	sort.Strings(names)
	var files []*ast.File
	foreign := map[string][]string{} // type → the types it embeds from elsewhere
	for _, n := range names {
		f, err := parser.ParseFile(fset, n, srcs[n], parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		ast.Inspect(f, func(node ast.Node) bool {
			ts, ok := node.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				for _, fld := range st.Fields.List {
					typ := fld.Type
					if star, ok := typ.(*ast.StarExpr); ok {
						typ = star.X
					}
					if sel, ok := typ.(*ast.SelectorExpr); ok && fld.Names == nil {
						foreign[ts.Name.Name] = append(foreign[ts.Name.Name], sel.X.(*ast.Ident).Name+"."+sel.Sel.Name)
					}
				}
			}
			return true
		})
	}
	if len(files) == 0 {
		return map[string][]string{}, nil
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
		for _, e := range foreign[name] {
			seen["(methods of embedded "+e+")"] = true
		}
		ms := []string{}
		for m := range seen {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		out[name] = ms
	}
	return out, nil
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
