package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/drover-dev/drover/tools/chaos/check"
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

// zkLogTime is the time stamp that starts a ZooKeeper server's log line
// ("2026-12-02T14:23:44.770+0000 [QuorumPeer…] WARN …").
const zkLogTime = "2006-01-02T15:04:05.000-0700"

// What a server logs when the ensemble loses its leader (a follower whose
// read of the leader timed out; a leader that lost its quorum), and when a
// server leads again.
const (
	followerLostLeader = "Exception when following the leader"
	leaderLostQuorum   = "Not sufficient followers synced"
	nowLeading         = "LEADING - LEADER ELECTION TOOK"
)

// zkElections reads the ZooKeeper servers' logs of a run and returns a
// check.ZKElection fault for every loss of the ensemble's leader that no
// injected ZooKeeper fault explains (the leader's kill or stop): from the
// first server's report of the loss to the first server's report that it
// leads again (a minute later at most, when none does). The servers each
// report a loss; those before the new leader are one.
func zkElections(dir string, injected []check.Fault) ([]check.Fault, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "zookeeper", "*", "zookeeper.log"))
	if err != nil {
		return nil, err
	}
	type event struct {
		at   time.Time
		lost bool // a loss of the leader, else a new one
	}
	var evs []event
	for _, p := range logs {
		if err := eachLine(p, func(line string) bool {
			lost := strings.Contains(line, followerLostLeader) || strings.Contains(line, leaderLostQuorum)
			if !lost && !strings.Contains(line, nowLeading) {
				return true
			}
			stamp, _, _ := strings.Cut(line, " ")
			if at, err := time.Parse(zkLogTime, stamp); err == nil {
				evs = append(evs, event{at, lost})
			}
			return true
		}); err != nil {
			return nil, err
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	var out []check.Fault
	for i := 0; i < len(evs); i++ {
		if !evs[i].lost {
			continue
		}
		f := check.Fault{Kind: check.ZKElection, Target: "zookeeper", Start: evs[i].at, End: evs[i].at.Add(time.Minute),
			Note: "the ensemble lost its leader with no ZooKeeper fault injected"}
		for i+1 < len(evs) && evs[i+1].at.Before(f.End) {
			i++
			if !evs[i].lost {
				f.End = evs[i].at
				break
			}
		}
		if !injectedElection(f, injected) {
			out = append(out, f)
		}
	}
	return out, nil
}

// injectedElection reports whether f began during an injected fault that
// takes the ZooKeeper leader away.
func injectedElection(f check.Fault, injected []check.Fault) bool {
	for _, in := range injected {
		if (in.Kind == check.ZKLeaderKill || in.Kind == check.ZKLeaderStop) && !f.Start.Before(in.Start) && !f.Start.After(in.End) {
			return true
		}
	}
	return false
}
