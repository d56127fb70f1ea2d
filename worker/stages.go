package worker

import (
	"sync/atomic"
	"time"

	"github.com/drover-dev/drover"
)

// stages are cheap debug counters of where a message's time goes between
// its enqueue and its handler's start, served in /debug/state ("stages"):
// a count and a total per stage, so that a reader takes two snapshots and
// divides the differences for the mean of the time between. They cost a
// clock read and two atomic adds per message and stage. Times are wall
// clock times (not Config.Clock): the enqueue time is the message's
// position, Redis TIME at the enqueue, on the same clock as the worker's
// on one machine and within NTP's error across machines.
type stages struct {
	wake          stageStat    // a parked loop signalled → its run goroutine runs
	readQueued    stageStat    // a read handed to the reader → its round trip is sent
	readTrip      stageStat    // the round trip sent → returned
	enqueueToRead stageStat    // a message's enqueue → its read returned
	enqueueStart  stageStat    // a first attempt's enqueue → its start
	startRecord   stageStat    // a start that waits for its record (runMessage) → the reply
	carried       stageStat    // a message's enqueue → taken from its wake-up, without a read (pushed.go)
	forwarded     atomic.Int64 // wake-ups of queues this member does not run, passed on (wakeups.go)
}

type stageStat struct{ n, ns atomic.Int64 }

func (s *stageStat) add(d time.Duration) {
	s.n.Add(1)
	s.ns.Add(int64(d))
}

func (s *stageStat) snapshot() StageStat {
	return StageStat{Count: s.n.Load(), TotalMs: float64(s.ns.Load()) / 1e6}
}

// StageStat is one stage's count and total time since the worker started.
type StageStat struct {
	Count   int64   `json:"count"`
	TotalMs float64 `json:"total_ms"`
}

// Stages is the worker's stage counters (stages, above).
type Stages struct {
	// Wake: a parked queue's signal (a wake-up) → its run goroutine runs.
	Wake StageStat `json:"wake"`
	// ReadQueued: a queue's read handed to the worker's reader → sent.
	ReadQueued StageStat `json:"read_queued"`
	// ReadTrip: the reader's round trip, per read it carried.
	ReadTrip StageStat `json:"read_trip"`
	// EnqueueToRead: a message's enqueue (its position) → its read
	// returned. What the stages above leave of it is the wake-up's way
	// (enqueue → the member's subscriber → signal) and the loop's work
	// before it reads.
	EnqueueToRead StageStat `json:"enqueue_to_read"`
	// EnqueueToStart: a first attempt's enqueue → the worker starts it.
	EnqueueToStart StageStat `json:"enqueue_to_start"`
	// StartRecord: the starts that waited for their record's round trip
	// before the task ran (a retry, a message another owner started, any
	// start before the owner's first commit since its claim), and how
	// long. A first start on a committed queue is sent without waiting
	// and is not counted.
	StartRecord StageStat `json:"start_record"`
	// BacklogRounds and BacklogReads: the backlogger's round trips and
	// the queues they measured.
	BacklogRounds int `json:"backlog_rounds"`
	BacklogReads  int `json:"backlog_reads"`
	// BacklogSkipped: the backlog reads caught-up queues did not send,
	// their delayed and dead counts known to be 0 (backlog.go).
	BacklogSkipped int `json:"backlog_skipped"`
	// ReadRounds and Reads: the reader's round trips and reads.
	ReadRounds int `json:"read_rounds"`
	Reads      int `json:"reads"`
	// Carried: the messages taken from the wake-ups that carried them
	// (enqueue → taken), each a read the queue did not make; the share of
	// EnqueueToRead's count that Carried has is the hit rate.
	Carried StageStat `json:"carried"`
	// Forwarded: the wake-ups of queues this member does not run (a
	// producer's route named it after the queue moved) that it passed on
	// to their owners (wakeups.go).
	Forwarded int64 `json:"forwarded"`
}

func (w *Worker) stageStats() *Stages {
	s := &w.stages
	st := &Stages{
		Wake: s.wake.snapshot(), ReadQueued: s.readQueued.snapshot(), ReadTrip: s.readTrip.snapshot(),
		EnqueueToRead: s.enqueueToRead.snapshot(), EnqueueToStart: s.enqueueStart.snapshot(),
		StartRecord: s.startRecord.snapshot(), Carried: s.carried.snapshot(), Forwarded: s.forwarded.Load(),
	}
	st.BacklogRounds, st.BacklogReads, st.BacklogSkipped = w.backlogs.stats()
	st.ReadRounds, st.Reads = w.reads.stats()
	return st
}

// sinceEnqueue is the time since the enqueue of the message at pos.
func sinceEnqueue(now time.Time, pos drover.Position) time.Duration {
	return now.Sub(time.UnixMicro(int64(pos)))
}
