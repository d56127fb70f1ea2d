package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/drover-dev/drover/tools/chaos/check"
)

// sentinelLogTime is the time stamp of a Sentinel's log line, in the
// machine's zone ("10759:X 30 Nov 2026 20:41:44.211 # +switch-master …").
const sentinelLogTime = "2 Jan 2006 15:04:05.000"

// sentinelEvent is one "+odown master" or "+switch-master" line.
type sentinelEvent struct {
	at       time.Time
	isSwitch bool
	master   string // the master marked down, or the new one
	old      string // a switch's old master
}

// failovers reads the Sentinels' logs of a Sentinel run (dir/sentinel-*/
// sentinel.log) and returns a check.Failover fault for every switch of
// the master that no injected sentinel fault explains (check.Failover):
// from downAfter before the first Sentinel marked the old master
// objectively down (or from the switch before, when that came less than
// a minute earlier or replaced the server promoted now: the server
// promoted may still have been catching up with it) to the last
// Sentinel's +switch-master. The Sentinels each log
// a switch; those within a minute of the first are one.
func failovers(dir string, downAfter time.Duration, injected []check.Fault) ([]check.Fault, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "sentinel-*", "sentinel.log"))
	if err != nil {
		return nil, err
	}
	var evs []sentinelEvent
	for _, p := range logs {
		e, err := readSentinelLog(p)
		if err != nil {
			return nil, err
		}
		evs = append(evs, e...)
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	var out []check.Fault
	var down time.Time // the first +odown since the last switch
	var last time.Time // the last switch
	var demoted string // the master the last switch replaced
	for i := 0; i < len(evs); i++ {
		e := evs[i]
		if !e.isSwitch {
			if down.IsZero() {
				down = e.at
			}
			continue
		}
		f := check.Fault{Kind: check.Failover, Target: "redis " + e.master, Start: e.at.Add(-downAfter), End: e.at,
			Note: "Sentinel switched the master on its own"}
		if !down.IsZero() && e.at.Sub(down) < time.Minute {
			f.Start = down.Add(-downAfter)
		}
		if !last.IsZero() && (e.at.Sub(last) < time.Minute || e.master == demoted) {
			// The server promoted now was a master replaced a moment
			// ago, or its replica since: it may not have caught up
			// with anything written since that switch. The master the
			// last switch replaced has been a replica only since then,
			// however long ago: a chaos run's, restarted for 52 s, was
			// still resyncing when Sentinel promoted it back 61 s later.
			f.Start = last
		}
		for i+1 < len(evs) && evs[i+1].isSwitch && evs[i+1].master == e.master && evs[i+1].at.Sub(e.at) < time.Minute {
			i++
			f.End = evs[i].at
		}
		down, last, demoted = time.Time{}, f.End, e.old
		if !injectedSwitch(f, injected) {
			out = append(out, f)
		}
	}
	return out, nil
}

// injectedSwitch reports whether f's switch happened during an injected
// sentinel fault (it is that fault's own failover).
func injectedSwitch(f check.Fault, injected []check.Fault) bool {
	for _, in := range injected {
		if in.Kind == check.Sentinel && !f.End.Before(in.Start) && !f.End.After(in.End) {
			return true
		}
	}
	return false
}

// readSentinelLog returns the +odown and +switch-master events of one
// Sentinel's log.
func readSentinelLog(path string) ([]sentinelEvent, error) {
	var out []sentinelEvent
	var bad error
	err := eachLine(path, func(line string) bool {
		var ev sentinelEvent
		_, rest, ok := strings.Cut(line, ":")
		if !ok || len(rest) < 2 {
			return true
		}
		stamp, msg, ok := strings.Cut(rest[2:], " # ")
		if !ok {
			return true
		}
		fields := strings.Fields(msg)
		switch {
		case len(fields) >= 6 && fields[0] == "+switch-master":
			ev.isSwitch, ev.master, ev.old = true, fields[4]+":"+fields[5], fields[2]+":"+fields[3]
		case len(fields) >= 5 && fields[0] == "+odown" && fields[1] == "master":
			ev.master = fields[3] + ":" + fields[4]
		default:
			return true
		}
		at, err := time.ParseInLocation(sentinelLogTime, stamp, time.Local)
		if err != nil {
			bad = fmt.Errorf("%s: a line's time %q: %w", path, stamp, err)
			return false
		}
		ev.at = at
		out = append(out, ev)
		return true
	})
	if err == nil {
		err = bad
	}
	return out, err
}
