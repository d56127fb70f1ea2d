package metrics_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/drover-dev/drover/metrics"
)

// nameConstants returns the values of the string constants of names.go's
// first const block (the metric names).
func nameConstants(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "names.go", nil, 0)
	if err != nil {
		t.Fatalf("parse names.go: %v", err)
	}
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		var out []string
		for _, spec := range g.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("names.go: want string literals in the first const block, have %T", v)
				}
				s, _ := strconv.Unquote(lit.Value)
				out = append(out, s)
			}
		}
		return out
	}
	t.Fatal("names.go: no const block")
	return nil
}

func TestEveryNameConstantIsInTheCatalogOnce(t *testing.T) {
	consts := nameConstants(t)
	if len(consts) < 30 {
		t.Fatalf("want the ~30 metric names from names.go, have %d: %v", len(consts), consts)
	}
	seen := map[string]int{}
	for _, d := range metrics.Catalog() {
		seen[d.Name]++
		if !slices.IsSorted(d.Labels) {
			t.Errorf("%s: want labels sorted, have %v", d.Name, d.Labels)
		}
		if d.Help == "" {
			t.Errorf("%s: want help text", d.Name)
		}
		if d.Expires && d.Kind != metrics.Gauge {
			t.Errorf("%s: only gauges expire, have a %s", d.Name, d.Kind)
		}
		if strings.HasSuffix(d.Name, "_ms") != (d.Unit == "milliseconds") {
			t.Errorf("%s: a name ends in _ms exactly when its unit is milliseconds; unit %q", d.Name, d.Unit)
		}
	}
	for _, c := range consts {
		if seen[c] != 1 {
			t.Errorf("name %q: want it in the catalog once, have %d times", c, seen[c])
		}
	}
	if len(seen) != len(consts) {
		t.Errorf("want the catalog to hold exactly the %d names of names.go, have %d", len(consts), len(seen))
	}
}

// docRow matches a row of the tables in docs/metrics.md:
// | `drover_x` | kind | labels | unit | meaning |
var docRow = regexp.MustCompile("(?m)^\\| `(drover_[a-z0-9_]+)` \\| (counter|gauge|summary|histogram) \\| ([^|]*)\\|")

// TestDocsListEveryMetricWithItsKindAndLabels holds docs/metrics.md and the
// catalog together, both ways.
func TestDocsListEveryMetricWithItsKindAndLabels(t *testing.T) {
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatalf("read docs/metrics.md: %v", err)
	}
	type row struct{ kind, labels string }
	rows := map[string]row{}
	for _, m := range docRow.FindAllStringSubmatch(string(doc), -1) {
		if _, dup := rows[m[1]]; dup {
			t.Errorf("docs/metrics.md: %s has two rows", m[1])
		}
		rows[m[1]] = row{m[2], strings.TrimSpace(m[3])}
	}
	for _, d := range metrics.Catalog() {
		name := metrics.PrometheusName(d.Name)
		r, ok := rows[name]
		if !ok {
			t.Errorf("docs/metrics.md: want a row for %s, have none", name)
			continue
		}
		delete(rows, name)
		if r.kind != string(d.Kind) {
			t.Errorf("docs/metrics.md %s: want kind %s, have %s", name, d.Kind, r.kind)
		}
		wantLabels := "—"
		if len(d.Labels) > 0 {
			wantLabels = "`" + strings.Join(d.Labels, "`, `") + "`"
		}
		if r.labels != wantLabels {
			t.Errorf("docs/metrics.md %s: want labels %s, have %s", name, wantLabels, r.labels)
		}
	}
	for name := range rows {
		t.Errorf("docs/metrics.md documents %s, which nothing exports", name)
	}
}
