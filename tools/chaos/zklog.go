package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// digestMismatch is what a ZooKeeper server (3.6 and later, digests on by
// default) logs when its data tree no longer matches the transaction it
// applies: its tree has diverged from the leader's.
const digestMismatch = "First digest mismatch"

// ensembleDivergence reads the ZooKeeper servers' logs of a run
// (dir/zookeeper/<id>/zookeeper.log) and returns one line per server whose
// data tree diverged, with the log line that says so. ZooKeeper 3.8.0 forked
// its tree in a chaos run (docs/reliability.md, "The chaos minute on an
// overloaded host"): a server reloaded a snapshot newer than the point it
// had just truncated to. Claims of the queues whose offsets the servers
// disagree on then fail with "version conflict" for as long as it lasts,
// which the report shows as queues that stopped; this line says why.
func ensembleDivergence(dir string) ([]string, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "zookeeper", "*", "zookeeper.log"))
	if err != nil {
		return nil, err
	}
	sort.Strings(logs)
	var out []string
	for _, p := range logs {
		if err := eachLine(p, func(line string) bool {
			if strings.Contains(line, digestMismatch) {
				out = append(out, fmt.Sprintf("server %s: %s", filepath.Base(filepath.Dir(p)), line))
				return false
			}
			return true
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// serverDisagrees is what a worker's ZooKeeper session logs when a claim
// found its server disagreeing with the leader (coordinator's
// Session.serverDisagrees) and moved the session to another server.
const serverDisagrees = "disagrees with the ensemble's leader"

// sessionMoves reads the workers' logs of a run (dir/w*.log) and returns
// each line where a session found its ZooKeeper server disagreeing with
// the leader, prefixed with the worker's name: with a diverged server, the
// claims that move off it instead of failing until the run ends.
func sessionMoves(dir string) ([]string, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "w*.log"))
	if err != nil {
		return nil, err
	}
	sort.Strings(logs)
	var out []string
	for _, p := range logs {
		name := strings.TrimSuffix(filepath.Base(p), ".log")
		if err := eachLine(p, func(line string) bool {
			if strings.Contains(line, serverDisagrees) {
				out = append(out, name+": "+line)
			}
			return true
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}
