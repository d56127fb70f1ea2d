package main

import (
	"strings"
	"testing"
)

func TestMergeSectionsReplacesOnlyTheSectionsRun(t *testing.T) {
	report := "# Benchmarks\n\n* Date: old\n\n## A\n\nold a\n\n## B\n\nold b\n\n## C\n\nold c\n\n---\n\nThe whole run took 1s.\n"
	fresh := "## B\n\nnew b\n\n## D\n\nnew d\n\n"
	got, err := mergeSections(report, fresh, "STAMP\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## A\n\nold a\n", "## B\n\nSTAMP\n\nnew b\n", "## C\n\nold c\n", "## D\n\nSTAMP\n\nnew d\n", "* Date: old", "The whole run took 1s."} {
		if !strings.Contains(got, want) {
			t.Errorf("merged report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "old b") {
		t.Errorf("merged report keeps the replaced section:\n%s", got)
	}
	if strings.Index(got, "## D") > strings.Index(got, "---") {
		t.Errorf("a new section must come before the closing line:\n%s", got)
	}
	if _, err := mergeSections(report, "", "S"); err == nil {
		t.Error("merging an empty run must fail")
	}
}
