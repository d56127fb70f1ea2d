package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/metrics"
)

// maxRoundsPerTick bounds how many full batches one Tick reads, so that a
// tick always ends and reports when to come back.
const maxRoundsPerTick = 100

// SlotID is the message id of entry name's slot: sched:<name>:<slot-unix>.
func SlotID(name string, slot time.Time) string {
	return "sched:" + name + ":" + strconv.FormatInt(slot.Unix(), 10)
}

// Tick fires every entry due at the clock's now, once, and returns when the
// next entry is due (the zero time when none is). It reads only due entries
// (BatchSize at a time), so it costs O(due entries). Entries are fired
// Concurrency at a time.
//
// For each due entry it enqueues the slot(s) its catch-up policy calls for
// with ids sched:<name>:<slot-unix>, then advances the entry's score to its
// next slot with a compare-and-set; if another scheduler advanced it first,
// this one's enqueues were no-ops (same ids) and it moves on. New and
// changed entries (score 0) are planned; invalid and disabled ones are
// parked (score +Inf) with a logged error.
//
// Tick does not check leadership: Run calls it only during a term, with
// the term's context. It stops at the first entry that fails (e.g. Redis
// unreachable) and returns that error; the entry stays due and is retried.
func (s *Scheduler) Tick(ctx context.Context) (next time.Time, err error) {
	now := s.clock.Now()
	for round := 0; round < maxRoundsPerTick; round++ {
		recs, err := s.store.DueSchedules(ctx, now, s.batch)
		if err != nil {
			return time.Time{}, fmt.Errorf("read due schedules: %w", err)
		}
		if err := s.fireAll(ctx, recs, now); err != nil {
			return time.Time{}, err
		}
		if len(recs) < s.batch {
			break
		}
	}
	due, ok, err := s.store.NextScheduleDue(ctx, now)
	if err != nil {
		return time.Time{}, fmt.Errorf("read next schedule due: %w", err)
	}
	if !ok {
		return time.Time{}, nil
	}
	return due, nil
}

// fireAll processes recs, Concurrency at a time, and returns the first error.
func (s *Scheduler) fireAll(ctx context.Context, recs []Record, now time.Time) error {
	if len(recs) == 1 || s.concurrency == 1 {
		for _, r := range recs {
			if err := s.fire(ctx, r, now); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, s.concurrency)
	)
	for _, r := range recs {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.fire(ctx, r, now); err != nil {
				mu.Lock()
				first = cmpErr(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// fire processes one due entry (see Tick).
func (s *Scheduler) fire(ctx context.Context, r Record, now time.Time) error {
	log := s.log.With("schedule", r.Name)
	def, err := parseStored(r.Name, r.Definition)
	if err != nil {
		log.Error("skipping invalid schedule entry until its definition is rewritten", "error", err)
		s.metrics.IncrCounter(metrics.ScheduleInvalid, 1)
		return s.advance(ctx, r, ScoreParked)
	}
	if def.Disabled {
		return s.advance(ctx, r, ScoreParked)
	}
	t, err := compileSpec(def.Schedule)
	if err != nil { // cannot happen: parseStored validated it
		return s.advance(ctx, r, ScoreParked)
	}
	var meta Meta
	if len(r.Meta) > 0 {
		if err := json.Unmarshal(r.Meta, &meta); err != nil {
			log.Warn("ignoring unreadable schedule meta", "error", err)
		}
	}
	offset := jitterOffset(def.Name, def.Jitter)
	// plan computes the first slot; one that is already due fires in this
	// same tick.
	plan := func() error {
		first := planFirst(t, meta, now)
		if first.IsZero() {
			log.Info("schedule entry has no slot left; parked")
			return s.advance(ctx, r, ScoreParked)
		}
		to := timeScore(first.Add(offset))
		log.Debug("planned", "slot", first, "offset", offset)
		won, err := s.store.AdvanceSchedule(ctx, r.Name, r.Score, to)
		if err != nil {
			return fmt.Errorf("plan schedule %s: %w", r.Name, err)
		}
		if won && to <= unixSeconds(now) {
			r.Score = to
			return s.fire(ctx, r, now)
		}
		return nil
	}
	if r.Score <= ScorePlan {
		return plan()
	}
	pending := scoreTime(r.Score).Add(-offset)
	if pending.Nanosecond() != 0 || (t.seq != nil && !isSlot(t.seq, pending)) {
		log.Warn("score is not a slot of the definition (changed without ZADD 0?); planning again", "score", r.Score)
		return plan()
	}

	f := planDue(t, pending, now.Add(-offset), catchupPolicy{policy: def.catchup(), grace: s.grace, limit: s.limit})
	queueLabel := metrics.L("queue", def.Queue)
	for _, slot := range f.fires {
		if err := ctx.Err(); err != nil {
			return err
		}
		fctx, span := s.tracer.StartFire(ctx, r.Name, def.Queue, slot) // linked to the schedule; nil when off
		dup, err := s.enqueuer.Enqueue(fctx, s.message(def, slot, now))
		span.End(err)
		if err != nil {
			return fmt.Errorf("enqueue slot %s of schedule %s: %w", slot.Format(time.RFC3339), r.Name, err)
		}
		if dup {
			s.metrics.IncrCounter(metrics.ScheduleDuplicates, 1, queueLabel)
			continue
		}
		s.metrics.IncrCounter(metrics.ScheduleFires, 1, queueLabel)
		s.metrics.AddSample(metrics.ScheduleLateness, float32(now.Sub(slot.Add(offset)).Seconds()), queueLabel)
	}
	if f.dropped {
		log.Warn("catch-up fired only the most recent missed slots", "limit", s.limit, "oldest_fired", f.fires[0])
	}
	if len(f.fires) == 0 {
		log.Info("missed slot skipped (catchup skip)", "slot", pending)
		s.metrics.IncrCounter(metrics.ScheduleSkipped, 1, queueLabel)
	}
	to := ScoreParked
	if !f.next.IsZero() {
		to = timeScore(f.next.Add(offset))
	}
	won, err := s.store.AdvanceSchedule(ctx, r.Name, r.Score, to)
	if err != nil {
		return fmt.Errorf("advance schedule %s: %w", r.Name, err)
	}
	if !won {
		log.Debug("another scheduler or an update moved the entry first")
		return nil
	}
	if len(f.fires) == 0 {
		return nil
	}
	// The slots are enqueued and the score moved: record it even if the term
	// ends now, so that total_run_count does not lose this fire.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	last := f.fires[len(f.fires)-1]
	if err := s.store.RecordScheduleFires(rctx, r.Name, len(f.fires), last, now); err != nil {
		log.Warn("fired, but could not record it in the entry's meta", "error", err)
	}
	return nil
}

// advance moves r's score to `to` unless someone else moved it first.
func (s *Scheduler) advance(ctx context.Context, r Record, to float64) error {
	if r.Score == to {
		return nil
	}
	if _, err := s.store.AdvanceSchedule(ctx, r.Name, r.Score, to); err != nil {
		return fmt.Errorf("advance schedule %s: %w", r.Name, err)
	}
	return nil
}

// message builds the job of def's slot.
func (s *Scheduler) message(def Definition, slot, now time.Time) *drover.Message {
	return &drover.Message{
		ID:         SlotID(def.Name, slot),
		Queue:      def.Queue,
		Task:       def.Task,
		Args:       def.Args,
		EnqueuedAt: now,
		Schedule:   def.Name,
		FireAt:     slot,
	}
}
