package coordinator

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// maxMethods is the most methods an exported type of this package may
// have, value and pointer receivers together (issue 32): a type past it
// does two jobs and is cut into roles (roles.go).
const maxMethods = 15

// TestNoExportedTypeHasMoreThanMaxMethods holds the rule `go doc -all
// ./coordinator` shows: no exported type with more than maxMethods
// exported methods, counting the methods an embedded field promotes.
func TestNoExportedTypeHasMoreThanMaxMethods(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	srcs := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs[f] = string(b)
	}
	counts, err := exportedMethods(srcs)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts["Session"]) == 0 {
		t.Fatalf("want Session's methods counted, have none: the counter is broken")
	}
	if msg := tooWide(counts, maxMethods); msg != "" {
		t.Error(msg)
	}
}

// TestMethodCounter shows the counter catches what the rule forbids: a
// type with too many methods, and methods promoted by embedding.
func TestMethodCounter(t *testing.T) {
	many := "package p\ntype Wide struct{}\n"
	for i := range maxMethods + 1 {
		many += fmt.Sprintf("func (w *Wide) M%d() {}\n", i)
	}
	tests := []struct {
		name string
		src  string
		want string // type reported, "" when none
	}{
		{"within", "package p\ntype T struct{}\nfunc (T) A() {}\nfunc (*T) B() {}\nfunc (T) c() {}\n", ""},
		{"too many", many, "Wide"},
		{"embedded", many + "type Role struct{ *Wide }\nfunc (Role) Own() {}\n", "Role"},
		{"unexported type", strings.ReplaceAll(many, "Wide", "wide"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counts, err := exportedMethods(map[string]string{"p.go": tt.src})
			if err != nil {
				t.Fatal(err)
			}
			msg := tooWide(counts, maxMethods)
			if tt.want == "" && msg != "" {
				t.Fatalf("want no report, have %q", msg)
			}
			if tt.want != "" && !strings.Contains(msg, tt.want+" has") {
				t.Fatalf("want %s reported, have %q", tt.want, msg)
			}
		})
	}
}

// exportedMethods returns, for every exported type declared in srcs (file
// name → Go source of one package), the names of its exported methods:
// declared on T or *T, plus those promoted from embedded types declared in
// the package. An embedded type from elsewhere counts as one method so
// that it cannot pass unseen.
func exportedMethods(srcs map[string]string) (map[string][]string, error) {
	fset := token.NewFileSet()
	declared := map[string]map[string]bool{} // type → its own methods (all)
	embeds := map[string][]string{}          // type → embedded type names
	var types []string
	for name, src := range srcs {
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) != 1 {
					continue
				}
				recv := typeName(d.Recv.List[0].Type)
				if declared[recv] == nil {
					declared[recv] = map[string]bool{}
				}
				declared[recv][d.Name.Name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					types = append(types, ts.Name.Name)
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, fld := range st.Fields.List {
						if len(fld.Names) == 0 {
							embeds[ts.Name.Name] = append(embeds[ts.Name.Name], typeName(fld.Type))
						}
					}
				}
			}
		}
	}
	var methodsOf func(typ string, seen map[string]bool) map[string]bool
	methodsOf = func(typ string, seen map[string]bool) map[string]bool {
		out := map[string]bool{}
		if seen[typ] {
			return out
		}
		seen[typ] = true
		for m := range declared[typ] {
			out[m] = true
		}
		for _, e := range embeds[typ] {
			if !slices.Contains(types, e) {
				out["(methods of embedded "+e+")"] = true
				continue
			}
			for m := range methodsOf(e, seen) {
				out[m] = true
			}
		}
		return out
	}
	counts := map[string][]string{}
	for _, typ := range types {
		if !ast.IsExported(typ) {
			continue
		}
		var names []string
		for m := range methodsOf(typ, map[string]bool{}) {
			if ast.IsExported(m) || strings.HasPrefix(m, "(") {
				names = append(names, m)
			}
		}
		sort.Strings(names)
		counts[typ] = names
	}
	return counts, nil
}

// tooWide describes every type with more than limit methods, "" if none.
func tooWide(counts map[string][]string, limit int) string {
	var out []string
	for typ, names := range counts {
		if len(names) > limit {
			out = append(out, fmt.Sprintf("%s has %d exported methods, want at most %d (cut it into roles, see roles.go): %s",
				typ, len(names), limit, strings.Join(names, ", ")))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// typeName is the name of a receiver or embedded type: T, *T, T[P], pkg.T.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.IndexExpr:
		return typeName(e.X)
	case *ast.IndexListExpr:
		return typeName(e.X)
	case *ast.SelectorExpr:
		return typeName(e.X) + "." + e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return fmt.Sprintf("%T", e)
}
