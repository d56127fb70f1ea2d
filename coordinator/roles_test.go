package coordinator

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/testing/testkit"
)

// maxMethods is the most methods an exported type of this package may
// have, value and pointer receivers together (issue 32): a type past it
// does two jobs and is cut into roles (roles.go).
const maxMethods = 15

// TestNoExportedTypeHasMoreThanMaxMethods holds the rule `go doc -all
// ./coordinator` shows: no exported type with more than maxMethods
// exported methods, counting the methods an embedded field promotes.
func TestNoExportedTypeHasMoreThanMaxMethods(t *testing.T) {
	srcs, err := testkit.PackageSources(".")
	if err != nil {
		t.Fatal(err)
	}
	counts, err := testkit.ExportedMethods(srcs)
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
			counts, err := testkit.ExportedMethods(map[string]string{"p.go": tt.src})
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
