package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/tools/chaos/check"
)

// record is run.json: the checker's input besides the task log and the
// enqueue log, and the processes' lifetimes for whoever reads the run.
type record struct {
	Run          check.Run            `json:"run"`
	Policy       check.Policy         `json:"policy"`
	Ordered      []string             `json:"ordered"`
	Faults       []check.Fault        `json:"faults"`
	Offsets      []check.OffsetSample `json:"offsets"`
	Schedules    []check.Schedule     `json:"schedules"`
	FinalOffsets map[string]int64     `json:"final_offsets"`
	DeadLetters  []check.DeadLetter   `json:"dead_letters"`
	Pending      []check.Enqueued     `json:"pending"`
	Lives        []life               `json:"processes"`
	LeaseFires   []check.LeaseFire    `json:"lease_fires"`
	Parks        []check.Park         `json:"parks"` // parked.go
	// Retired and KeyChurn: the key-churn family's keys retired after the
	// drain, and its summary (churn.go).
	Retired  []string            `json:"retired,omitempty"`
	KeyChurn *check.ChurnSummary `json:"key_churn,omitempty"`
}

func (r *record) save(dir string) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return fmt.Errorf("encode run record: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, recordName), b, 0o644); err != nil {
		return fmt.Errorf("write run record: %w", err)
	}
	return nil
}

func orderedNames(ordered map[string]bool) []string {
	var out []string
	for q, o := range ordered {
		if o {
			out = append(out, q)
		}
	}
	sort.Strings(out)
	return out
}

// recheck reads a run directory and checks it.
func recheck(dir string) (*result, error) {
	b, err := os.ReadFile(filepath.Join(dir, recordName))
	if err != nil {
		return nil, fmt.Errorf("read run record: %w", err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("decode %s: %w", recordName, err)
	}
	in := check.Input{
		Ordered: map[string]bool{}, Faults: rec.Faults, Offsets: rec.Offsets, Schedules: rec.Schedules,
		FinalOffsets: rec.FinalOffsets, DeadLetters: rec.DeadLetters, Pending: rec.Pending, Policy: rec.Policy,
		LeaseFires: rec.LeaseFires, Parks: rec.Parks, Retired: map[string]bool{}, KeyChurn: rec.KeyChurn,
	}
	// The failovers Sentinel made on its own are read from its logs here,
	// for a run and a check of a kept run alike (none in a run directory
	// without Sentinels).
	switches, err := failovers(dir, sentinelDownAfter, rec.Faults)
	if err != nil {
		return nil, fmt.Errorf("read the Sentinels' logs: %w", err)
	}
	in.Faults = append(in.Faults, switches...)
	// So are the ZooKeeper ensemble's own elections.
	elections, err := zkElections(dir, rec.Faults)
	if err != nil {
		return nil, fmt.Errorf("read the ZooKeeper servers' logs: %w", err)
	}
	in.Faults = append(in.Faults, elections...)
	for _, q := range rec.Retired {
		in.Retired[q] = true
	}
	for _, q := range rec.Ordered {
		in.Ordered[q] = true
	}
	if in.Enqueued, err = readEnqueued(filepath.Join(dir, enqueuedLogName)); err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, tasksLogName))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("open task log: %w", err)
	}
	if f != nil {
		defer f.Close()
		r := check.NewTaskLogReader(f)
		if in.Executions, err = r.Next(); err != nil {
			return nil, err
		}
		if r.Malformed > 0 {
			return nil, fmt.Errorf("task log: %d malformed lines", r.Malformed)
		}
	}
	rep := check.Check(in)
	if rep.EnsembleDiverged, err = ensembleDivergence(dir); err != nil {
		return nil, fmt.Errorf("read the ZooKeeper servers' logs: %w", err)
	}
	if rep.SessionMoves, err = sessionMoves(dir); err != nil {
		return nil, fmt.Errorf("read the workers' logs: %w", err)
	}
	return &result{Run: rec.Run, Report: rep, Dir: dir}, nil
}

// readEnqueued reads the enqueue log ("queue id position" per line).
func readEnqueued(path string) ([]check.Enqueued, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open enqueue log: %w", err)
	}
	defer f.Close()
	var out []check.Enqueued
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			return nil, fmt.Errorf("enqueue log line %q: want 3 fields", sc.Text())
		}
		pos, err := strconv.ParseInt(fs[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("enqueue log line %q: %w", sc.Text(), err)
		}
		out = append(out, check.Enqueued{Queue: fs[0], ID: fs[1], Position: pos})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read enqueue log: %w", err)
	}
	return out, nil
}
