package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestABOnAThrowawayRepository runs the whole tool on testdata/toy, whose
// two commits differ in what BenchmarkWidgets makes (10 widgets, then 20),
// in a repository made for the test: the deterministic figures must come
// out as measured differences, the per-run counter as noise, and the
// caller's repository exactly as it was.
func TestABOnAThrowawayRepository(t *testing.T) {
	repo := t.TempDir()
	gitIn(t, repo, "init", "--quiet")
	commitTree(t, repo, "testdata/toy/a", "toy: ten widgets")
	commitTree(t, repo, "testdata/toy/b", "toy: twenty widgets")
	head := gitIn(t, repo, "rev-parse", "HEAD")

	var out, log strings.Builder
	c := config{Dir: repo, A: "HEAD~1", B: "HEAD", Bench: "Widgets", Pkg: ".", Rounds: 3, Count: 1,
		Benchtime: "100x", Cmdline: "abtool (test)"}
	if err := run(context.Background(), c, &out, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	report := out.String()
	t.Log(report)

	rows := map[string][]string{}
	for _, line := range strings.Split(report, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) == 8 && strings.TrimSpace(cells[1]) == "BenchmarkWidgets" {
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			rows[cells[2]] = cells[3:7]
		}
	}
	for unit, want := range map[string][]string{
		// The commits differ: disjoint spreads, a ratio and a verdict.
		"widgets/op": {"10.00 (10.00 – 10.00)", "20.00 (20.00 – 20.00)", "2.000", "B higher by 100.0% (spreads disjoint)"},
		// 1, 2, 3 on both sides: each side's runs ran in its own worktree,
		// three each, and a spread that covers the other is noise.
		"run/op": {"2.00 (1.00 – 3.00)", "2.00 (1.00 – 3.00)", "1.000", "not measured (spreads overlap)"},
		// make([]int, n) escapes to sink: one allocation both sides.
		"allocs/op": {"1.00 (1.00 – 1.00)", "1.00 (1.00 – 1.00)", "1.000", "same"},
	} {
		if have := rows[unit]; strings.Join(have, " | ") != strings.Join(want, " | ") {
			t.Errorf("%s: want %q, have %q", unit, want, have)
		}
	}
	if row := rows[cpuPerOp]; row == nil || strings.HasPrefix(row[0], "—") {
		t.Errorf("%s: want a figure per side, have %q", cpuPerOp, row)
	}
	if row := rows["B/op"]; row == nil || !strings.HasPrefix(row[3], "B higher") {
		t.Errorf("B/op: want B higher (80 against 160 bytes), have %q", row)
	}
	for _, want := range []string{
		gitIn(t, repo, "rev-parse", "--short", "HEAD~1") + " (toy: ten widgets)",
		gitIn(t, repo, "rev-parse", "--short", "HEAD") + " (toy: twenty widgets)",
		"load average", "abtool (test)", "3 values",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report does not say %q", want)
		}
	}
	if strings.Contains(report, wholeRun) {
		t.Errorf("one benchmark a run has its own %s: want no %s row", cpuPerOp, wholeRun)
	}
	if strings.Count(log.String(), "abtool: round ") != 6 {
		t.Errorf("want 6 runs logged (3 rounds × 2 sides), have:\n%s", log.String())
	}

	// The caller's repository: same HEAD, nothing changed or left behind.
	if have := gitIn(t, repo, "rev-parse", "HEAD"); have != head {
		t.Errorf("HEAD moved: want %s, have %s", head, have)
	}
	if st := gitIn(t, repo, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("the working tree changed:\n%s", st)
	}
	if wt := gitIn(t, repo, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
		t.Errorf("worktrees left behind:\n%s", wt)
	}
}

func TestABRefusesAnUnknownRevision(t *testing.T) {
	repo := t.TempDir()
	gitIn(t, repo, "init", "--quiet")
	commitTree(t, repo, "testdata/toy/a", "toy: ten widgets")
	c := config{Dir: repo, A: "no-such-branch", B: "HEAD", Bench: ".", Pkg: ".", Rounds: 1, Count: 1}
	err := run(context.Background(), c, new(strings.Builder), new(strings.Builder))
	if err == nil || !strings.HasPrefix(err.Error(), `-a "no-such-branch": not a commit`) {
		t.Fatalf(`want -a "no-such-branch": not a commit…, have %v`, err)
	}
}

// commitTree replaces repo's files with those of dir and commits them.
func commitTree(t *testing.T, repo, dir, message string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "-c", "user.name=abtool test", "-c", "user.email=abtool@example.com", "commit", "--quiet", "-m", message)
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
