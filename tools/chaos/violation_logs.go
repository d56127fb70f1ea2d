package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/drover-dev/drover/tools/chaos/check"
)

// maxLinesPerLog bounds what violationLogs copies from one worker's log.
const maxLinesPerLog = 400

// violationLogs writes, for a failed run, the lines of every worker log in
// dir (w*.log) that concern a queue some violation names, with the
// session's events beside them: a run's directory goes with its temporary
// directory, and CI keeps only the test's output, so without these lines a
// violation seen once in CI cannot be read again (a worker's "queue lost"
// or "commit refused" line says which mechanism repeated the messages).
//
// A queue moved while no worker reached Redis names no queue: the lines
// that say why are the rebalance leader's and the Redis probes' (which
// member flagged itself when, what the leader decided), so those are
// copied for it.
func violationLogs(w io.Writer, dir string, vs []check.Violation) error {
	queues := violationQueues(vs)
	placement := slices.ContainsFunc(vs, func(v check.Violation) bool { return v.Invariant == check.MovedWithoutRedis })
	if len(queues) == 0 && !placement {
		return nil
	}
	logs, err := filepath.Glob(filepath.Join(dir, "w*.log"))
	if err != nil {
		return err
	}
	sort.Strings(logs)
	for _, p := range logs {
		var lines []string
		if err := eachLine(p, func(l string) bool {
			if concerns(l, queues) || placement && placementLine(l) {
				lines = append(lines, l)
			}
			return true
		}); err != nil {
			return err
		}
		about := strings.Join(queues, ", ")
		if placement {
			about = strings.TrimPrefix(about+", placement and Redis health", ", ")
		}
		fmt.Fprintf(w, "--- %s: %d lines about %s or the session", filepath.Base(p), len(lines), about)
		if len(lines) > maxLinesPerLog {
			fmt.Fprintf(w, " (the last %d)", maxLinesPerLog)
			lines = lines[len(lines)-maxLinesPerLog:]
		}
		fmt.Fprintln(w)
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	return nil
}

// violationQueues returns the queues the violations name: a detail starts
// with "<queue>/<message id>".
func violationQueues(vs []check.Violation) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range vs {
		q, _, ok := strings.Cut(v.Detail, "/")
		if !ok || q == "" || strings.ContainsAny(q, " \t") || seen[q] {
			continue
		}
		seen[q] = true
		out = append(out, q)
	}
	sort.Strings(out)
	return out
}

// placementLine reports whether a worker's log line is the rebalance
// leader's or its Redis probe's.
func placementLine(line string) bool {
	return strings.Contains(line, "drover.rebalance:") || strings.Contains(line, "drover.redis:")
}

// concerns reports whether a worker's log line is about one of queues
// (its queue= field), or is a session or pause event of the worker.
func concerns(line string, queues []string) bool {
	for _, q := range queues {
		i := strings.Index(line, "queue="+q)
		if i < 0 {
			continue
		}
		end := i + len("queue=") + len(q)
		if end == len(line) || line[end] == ' ' || line[end] == '"' {
			return true
		}
	}
	return strings.Contains(line, "zookeeper session") || strings.Contains(line, "paus") ||
		strings.Contains(line, "giving this member's queues up") || strings.Contains(line, "takes work again")
}
