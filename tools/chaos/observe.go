package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/tools/chaos/check"
)

// offsetSampler reads every queue's /offsets node over the harness's own
// session and keeps each read that differs from the queue's previous one.
type offsetSampler struct {
	zk     *zkClient
	queues []string
	every  time.Duration

	mu      sync.Mutex
	samples []check.OffsetSample
	last    map[string]check.OffsetSample
	errors  int
}

// run samples until ctx ends.
func (s *offsetSampler) run(ctx context.Context) {
	s.last = map[string]check.OffsetSample{}
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		s.sampleAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *offsetSampler) sampleAll(ctx context.Context) {
	for _, q := range s.queues {
		if ctx.Err() != nil {
			return
		}
		if _, err := s.read(ctx, q); err != nil {
			s.mu.Lock()
			s.errors++
			s.mu.Unlock()
		}
	}
}

// read reads q's offset once and records it when it changed.
func (s *offsetSampler) read(ctx context.Context, q string) (check.OffsetSample, error) {
	sess, err := s.zk.session(ctx)
	if err != nil {
		return check.OffsetSample{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	on, err := sess.Claims().Offset(rctx, q)
	if err != nil {
		return check.OffsetSample{}, err
	}
	smp := check.OffsetSample{At: time.Now(), Queue: q, Version: on.Version, Position: int64(on.Offset.Position), Member: on.Offset.Member}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.last[q]; !ok || prev.Version != smp.Version || prev.Position != smp.Position {
		s.samples = append(s.samples, smp)
		s.last[q] = smp
	}
	return smp, nil
}

func (s *offsetSampler) result() ([]check.OffsetSample, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]check.OffsetSample(nil), s.samples...), s.errors
}

// progress writes timestamped lines about the run to w.
type progress struct {
	w     io.Writer
	start time.Time
	mu    sync.Mutex
}

func (p *progress) printf(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "[%6.1fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, a...))
}

// sessionLosses reads the workers' logs for reported session losses (not
// the clean close at shutdown) and returns them as observed faults on the
// worker process alive at the time: from one session timeout before the
// report (when the silence began at the latest) to the report.
func sessionLosses(dir string, lives []life, sessionTimeout time.Duration) ([]check.Fault, error) {
	var out []check.Fault
	names := map[string]bool{}
	for _, l := range lives {
		names[l.Name] = true
	}
	for name := range names {
		if !strings.HasPrefix(name, "w") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name+".log"))
		if err != nil {
			return nil, fmt.Errorf("read the log of %s: %w", name, err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !testkit.SessionLost(line) {
				continue
			}
			ts, _, _ := strings.Cut(line, " ")
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				continue
			}
			pid := 0
			for _, l := range lives {
				if l.Name == name && !at.Before(l.Start) && (l.End.IsZero() || !at.After(l.End)) {
					pid = l.PID
				}
			}
			if pid == 0 {
				continue
			}
			reason := ""
			if i := strings.Index(line, "reason="); i >= 0 {
				reason = line[i+len("reason="):]
			}
			out = append(out, check.Fault{Kind: check.SessionLost, Target: name, PIDs: []int{pid},
				Start: at.Add(-sessionTimeout), End: at, Note: reason})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].End.Before(out[j].End) })
	return out, nil
}

// leaseFires reads the workers' logs for their task leases' firings (the
// supervisor writes to the worker's stderr: "drover lease: fired at <time>:
// … SIGTERM to <n> process groups …") and attributes each to the worker
// process alive at the time.
func leaseFires(dir string, lives []life) ([]check.LeaseFire, error) {
	const marker = "drover lease: fired at "
	var out []check.LeaseFire
	names := map[string]bool{}
	for _, l := range lives {
		if strings.HasPrefix(l.Name, "w") {
			names[l.Name] = true
		}
	}
	for name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name+".log"))
		if err != nil {
			return nil, fmt.Errorf("read the log of %s: %w", name, err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			i := strings.Index(line, marker)
			if i < 0 {
				continue
			}
			rest := line[i+len(marker):]
			ts, rest, _ := strings.Cut(rest, ": ")
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				continue
			}
			groups := 0
			if j := strings.Index(rest, "SIGTERM to "); j >= 0 {
				fmt.Sscanf(rest[j+len("SIGTERM to "):], "%d", &groups)
			}
			for _, l := range lives {
				if l.Name == name && !at.Before(l.Start) && (l.End.IsZero() || !at.After(l.End)) {
					out = append(out, check.LeaseFire{WorkerPID: l.PID, At: at, Groups: groups})
					break
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, nil
}
