package web

import (
	"context"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/ops"
)

// idleAfter is how long after the last page or API read Run stops
// sampling.
const idleAfter = 10 * time.Minute

// sample is the fleet's totals at one moment, for the overview's history.
type sample struct {
	At      time.Time `json:"at"`
	Lag     int64     `json:"lag"`
	Dead    int64     `json:"dead"`
	Delayed int64     `json:"delayed"`
	// Throughput is the tasks finished per second since the previous
	// sample, from the members' tasks_total counters; -1 when unknown.
	Throughput float64 `json:"throughput"`
	// Failures is the attempts per second among them that did not
	// succeed (outcome other than success); -1 when unknown.
	Failures float64 `json:"failures"`
}

// sample reads the fleet once (through the snapshot cache) and the
// members' task counters, and appends to the history.
func (s *Server) sample(ctx context.Context) {
	// Nobody has looked for a while: do not read a large fleet for nothing
	// (the history then has a gap).
	if s.cfg.Now().Sub(time.Unix(0, s.lastUse.Load())) > idleAfter {
		return
	}
	if s.fleetOps() == nil { // no ZooKeeper session yet
		return
	}
	s.reading.Store(true)
	snap, err := s.fleetOps().Members().Snapshot(ctx)
	s.reading.Store(false)
	if err != nil {
		s.log.Warn("sample the fleet", "error", err)
		return
	}
	tasks, err := s.fleetOps().Members().TasksTotal(ctx, snap.Members)
	if err != nil {
		s.log.Debug("read members' task counters", "error", err)
	}
	s.snapMu.Lock()
	s.snap, s.snapAt = snap, s.cfg.Now()
	s.snapMu.Unlock()
	s.record(snap, tasks)
}

// record appends a sample; tasks are the members' task counters (nil when
// not read: the throughput is then unknown).
func (s *Server) record(snap *ops.Snapshot, tasks map[string]ops.TaskCounts) {
	s.histMu.Lock()
	defer s.histMu.Unlock()
	smp := sample{At: snap.At, Lag: snap.Totals.Lag, Dead: snap.Totals.Dead, Delayed: snap.Totals.Delayed, Throughput: -1, Failures: -1}
	if tasks != nil {
		if s.lastTask != nil && len(s.history) > 0 {
			var done, failed float64
			for m, v := range tasks {
				if prev, ok := s.lastTask[m]; ok && v.Total >= prev.Total {
					done += v.Total - prev.Total
					failed += max(v.Failed-prev.Failed, 0)
				}
			}
			for i := len(s.history) - 1; i >= 0; i-- {
				if s.history[i].Throughput >= 0 || i == 0 {
					if dt := snap.At.Sub(s.lastTaskAt).Seconds(); dt > 0 {
						smp.Throughput = done / dt
						smp.Failures = failed / dt
					}
					break
				}
			}
		}
		s.lastTask, s.lastTaskAt = tasks, snap.At
	}
	if n := len(s.history); n > 0 && !snap.At.After(s.history[n-1].At) {
		return
	}
	s.history = append(s.history, smp)
	if len(s.history) > historyLen {
		s.history = s.history[len(s.history)-historyLen:]
	}
}

// Overview is the overview page's data (GET /api/v1/overview).
type Overview struct {
	ops.FleetHead
	At      time.Time       `json:"at"`
	Members []ops.MemberRow `json:"members"`
	Totals  ops.Totals      `json:"totals"`
	History []sample        `json:"history"`
}

func (s *Server) overview(snap *ops.Snapshot) Overview {
	s.histMu.Lock()
	hist := append([]sample(nil), s.history...)
	s.histMu.Unlock()
	return Overview{FleetHead: snap.FleetHead, At: snap.At, Members: snap.Members, Totals: snap.Totals, History: hist}
}

// sparkline draws values as an inline SVG polyline (server-rendered: no
// script).
func sparkline(values []float64) template.HTML {
	const w, h = 300.0, 40.0
	if len(values) < 2 {
		return template.HTML(`<svg class="spark" viewBox="0 0 300 40"><text x="4" y="24">collecting…</text></svg>`)
	}
	hi := 0.0
	for _, v := range values {
		hi = max(hi, v)
	}
	if hi == 0 {
		hi = 1
	}
	var pts strings.Builder
	for i, v := range values {
		x := float64(i) * w / float64(len(values)-1)
		y := h - 2 - max(v, 0)*(h-4)/hi
		fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
	}
	return template.HTML(fmt.Sprintf(`<svg class="spark" viewBox="0 0 300 40" preserveAspectRatio="none"><polyline points="%s"/></svg>`, strings.TrimSpace(pts.String())))
}
