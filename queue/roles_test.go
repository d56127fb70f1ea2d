package queue

import (
	"slices"
	"sort"
	"testing"

	"github.com/drover-dev/drover/internal/testing/testkit"
)

// maxRoleMethods is the most exported methods an exported type of this
// package may have (docs/decisions.md, "queue.Store by role (issue 32)"):
// past it, a type holds more than one role.
const maxRoleMethods = 15

// TestNoTypeHoldsTooManyRoles counts, for every exported type T of the
// package's own source (tests left out), the exported methods of T and *T
// together, promoted ones included: what `go doc -all` lists.
func TestNoTypeHoldsTooManyRoles(t *testing.T) {
	srcs, err := testkit.PackageSources(".")
	if err != nil {
		t.Fatalf("read the package: %v", err)
	}
	methods, err := testkit.ExportedMethods(srcs)
	if err != nil {
		t.Fatalf("parse the package: %v", err)
	}
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
	want := []string{"Backlog", "BacklogMany", "CheckQueues", "DeadLetter", "ParkHead", "PromoteMany", "QueueHeads",
		"ReadAfter", "ReadMany", "RecordStarts", "Retry", "RouteWakeups", "Trim", "TrimMany", "TrimRecording"}
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
	methods, err := testkit.ExportedMethods(map[string]string{"p.go": src})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"Outer": {"Also", "Hidden", "Mine", "Own"}}
	if len(methods) != 1 || !slices.Equal(methods["Outer"], want["Outer"]) {
		t.Fatalf("methods: want %v, have %v", want, methods)
	}
}
