package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/drover-dev/drover/internal/chaos/check"
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
	on, err := sess.ReadOffset(rctx, q)
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
