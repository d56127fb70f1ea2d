package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// revision is one side: the commit named on the command line, checked out
// into a worktree of its own with its test binary built.
type revision struct {
	Side    string // "A" or "B"
	Name    string // as given: HEAD~1, a branch, a hash
	Hash    string // the full commit hash
	Short   string
	Subject string
	Tree    string // the temporary worktree
	PkgDir  string // the package's directory in Tree: where the binary runs
	Binary  string // the test binary
}

// repository is the caller's git repository, seen from the caller's
// directory. Nothing here writes to its working tree or index: worktrees
// are added under a temporary directory and removed again.
type repository struct {
	Dir    string // the caller's directory
	Top    string // the repository's top level
	Prefix string // Dir relative to Top, "" or ending in "/"
}

func openRepository(ctx context.Context, dir string) (repository, error) {
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return repository{}, fmt.Errorf("find the git repository of %s: %w", dir, err)
	}
	prefix, err := git(ctx, dir, "rev-parse", "--show-prefix")
	if err != nil {
		return repository{}, fmt.Errorf("find %s in its repository: %w", dir, err)
	}
	return repository{Dir: dir, Top: top, Prefix: prefix}, nil
}

// resolve names the commit rev stands for now, so that both sides are fixed
// before anything runs (a branch that moves during the run changes nothing).
func (r repository) resolve(ctx context.Context, side, rev string) (revision, error) {
	hash, err := git(ctx, r.Dir, "rev-parse", "--verify", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return revision{}, fmt.Errorf("-%s %q: not a commit: %w", strings.ToLower(side), rev, err)
	}
	short, err := git(ctx, r.Dir, "rev-parse", "--short", hash)
	if err != nil {
		return revision{}, fmt.Errorf("-%s %q: %w", strings.ToLower(side), rev, err)
	}
	subject, err := git(ctx, r.Dir, "log", "-1", "--format=%s", hash)
	if err != nil {
		return revision{}, fmt.Errorf("-%s %q: %w", strings.ToLower(side), rev, err)
	}
	return revision{Side: side, Name: rev, Hash: hash, Short: short, Subject: subject}, nil
}

// checkout adds a detached worktree of rev under tmp and returns a function
// that removes it (and its administrative files in the repository).
func (r repository) checkout(ctx context.Context, rev *revision, tmp string) (remove func(), err error) {
	rev.Tree = filepath.Join(tmp, strings.ToLower(rev.Side))
	if _, err := git(ctx, r.Dir, "worktree", "add", "--detach", "--quiet", rev.Tree, rev.Hash); err != nil {
		return nil, fmt.Errorf("check out %s (%s): %w", rev.Name, rev.Short, err)
	}
	return func() {
		// Not ctx: an interrupted run must still clean up.
		if _, err := git(context.Background(), r.Dir, "worktree", "remove", "--force", rev.Tree); err != nil {
			fmt.Fprintf(os.Stderr, "abtool: remove worktree %s: %v\n", rev.Tree, err)
		}
	}, nil
}

// build compiles pkg's test binary in rev's worktree once, to tmp, and finds
// the package's directory there: the binary runs in it, as `go test` would
// run it, so that relative paths in the benchmarks (testdata, ../../cmd/drover)
// are the revision's own.
func (r repository) build(ctx context.Context, rev *revision, pkg, tags, tmp string) error {
	dir := filepath.Join(rev.Tree, r.Prefix)
	rev.Binary = filepath.Join(tmp, strings.ToLower(rev.Side)+".test")
	args := []string{"test", "-c", "-o", rev.Binary}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, pkg)
	if out, err := goCmd(ctx, dir, args...); err != nil {
		return fmt.Errorf("build the test binary of %s at %s (%s): %w\n%s", pkg, rev.Name, rev.Short, err, out)
	}
	if _, err := os.Stat(rev.Binary); err != nil {
		return fmt.Errorf("build the test binary of %s at %s (%s): no binary (a package without tests?)", pkg, rev.Name, rev.Short)
	}
	out, err := goCmd(ctx, dir, "list", "-f", "{{.Dir}}", pkg)
	if err != nil {
		return fmt.Errorf("find the directory of %s at %s: %w\n%s", pkg, rev.Name, err, out)
	}
	rev.PkgDir = strings.TrimSpace(out)
	return nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func goCmd(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
