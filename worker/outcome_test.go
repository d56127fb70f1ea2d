package worker

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/worker/executor"
)

// Succeeded messages leave outcome records that ride with the trims after
// commits (never a write of their own); a retried message carries its last
// error in the envelope; a queue with records off writes none.
func TestOutcomeRecordsRideWithTheTrim(t *testing.T) {
	log := newMemLog()
	for i := 0; i < 20; i++ {
		log.add("q", msg(fmt.Sprintf("m%02d", i)))
	}
	log.add("q", msg("flaky"))
	log.add("off", msg("x"))
	ex := &scriptedExecutor{outcome: func(m *drover.Message) executor.Outcome {
		if m.ID == "flaky" && m.Attempt == 0 {
			return executor.OutcomeFailure
		}
		return executor.OutcomeSuccess
	}}
	w := newTestWorker(t, log, ex, nil)
	claim, offClaim := &memClaim{}, &memClaim{}
	if err := w.Start(queueConfig("q", func(qc *drover.QueueConfig) { qc.Outcomes.StdoutTail = 4 }), claim); err != nil {
		t.Fatal(err)
	}
	zero := drover.Duration(0)
	if err := w.Start(queueConfig("off", func(qc *drover.QueueConfig) { qc.Outcomes.Retention = &zero }), offClaim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "21 records of q", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.outcomes["q"]) == 21
	})
	waitFor(t, "off's offset committed", func() bool { return offClaim.committed() == 22 })

	log.mu.Lock()
	defer log.mu.Unlock()
	byID := map[string]drover.Outcome{}
	for _, o := range log.outcomes["q"] {
		if _, dup := byID[o.ID]; dup {
			t.Fatalf("record of %s written twice", o.ID)
		}
		byID[o.ID] = o
	}
	o := byID["flaky"]
	if o.State != drover.JobSucceeded || o.Task != "t" || o.Member != "m1" || o.Attempt != 1 || o.StdoutTail != "laky" {
		t.Fatalf("flaky's record: want succeeded by m1 at attempt 1 with the last 4 bytes of stdout, have %+v", o)
	}
	if n := len(log.outcomes["off"]); n != 0 {
		t.Fatalf("queue with records off: want no record, have %d", n)
	}
	// Records ride in the committer's TrimMany calls, with a trim or as a
	// records-only request of the same call: at most one request of q's
	// carrying records per call. (Not one per commit: a message that
	// finishes while an older one still runs has its record sent at the
	// next flush without a commit, issue 41.)
	withRecords, carried := 0, 0
	for i, call := range log.trimCalls {
		inCall := 0
		for _, r := range call {
			if len(r.Outcomes) > 0 {
				if r.Queue != "q" {
					t.Fatalf("records of %s in a trim: want q's only", r.Queue)
				}
				inCall++
				carried += len(r.Outcomes)
			}
		}
		if inCall > 1 {
			t.Fatalf("trim call %d carries %d requests with q's records: want one a call", i, inCall)
		}
		withRecords += inCall
	}
	if withRecords == 0 || carried != len(log.outcomes["q"]) {
		t.Fatalf("want all %d records of q carried by TrimMany calls, have %d in %d requests", len(log.outcomes["q"]), carried, withRecords)
	}

	// The retry carried the failure in the envelope.
	var retried *drover.Message
	for _, d := range log.log["q"] {
		if m, err := d.Decode(); err == nil && d.ID == "flaky" && m.Attempt == 1 {
			retried = m
		}
	}
	if retried == nil {
		t.Fatal("want flaky promoted back to the log at attempt 1")
	}
	var f drover.Failure
	if err := json.Unmarshal(retried.Extra[lastErrorField], &f); err != nil || f.ExitCode != 1 || f.StderrTail != "boom" || f.FailedAt.IsZero() {
		t.Fatalf("want last_error with exit 1 and stderr boom in the retried envelope, have %s (%v)", retried.Extra[lastErrorField], err)
	}
}

// The queue loop reuses its record buffer after each offer, so an offer
// must keep a copy: records the committer holds do not change when the
// loop writes the next ones into the same buffer, and a queue's later
// offers add to what waits.
func TestAnOfferKeepsItsOwnCopyOfTheLoopsRecords(t *testing.T) {
	w := newTestWorker(t, newMemLog(), &scriptedExecutor{}, nil)
	c := newCommitter(w)
	c.running = true // no flush goroutine: the test reads what waits
	l := &queueLoop{w: w, name: "q"}
	qc := queueConfig("q", nil)
	l.cfg.Store(&qc)

	buf := []drover.Outcome{{ID: "a"}}
	c.offer(l, drover.Offset{Position: 1}, buf)
	buf = append(buf[:0], drover.Outcome{ID: "b"}) // the loop's next record
	c.offer(l, drover.Offset{Position: 2}, buf)
	buf[0].ID = "c"

	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.pending[l]
	var ids []string
	for _, o := range r.outcomes {
		ids = append(ids, o.ID)
	}
	if fmt.Sprint(ids) != "[a b]" || r.off.Position != 2 {
		t.Fatalf("want records [a b] waiting at offset 2, have %v at %d", ids, r.off.Position)
	}
}

// Every retried attempt's failure is kept in the envelope's history, oldest
// first, at most drover.MaxAttemptErrors, each stderr cut short; the last
// error stays in last_error as before.
func TestAttemptErrorsKeepEveryAttemptBounded(t *testing.T) {
	m := &drover.Message{ID: "m", Queue: "q", Task: "t"}
	long := strings.Repeat("x", 2*attemptErrorStderr)
	for i := range drover.MaxAttemptErrors + 3 {
		setLastError(m, drover.Failure{Reason: fmt.Sprintf("exit status %d", i), ExitCode: i, StderrTail: long})
	}
	var h []drover.Failure
	if err := json.Unmarshal(m.Extra[drover.AttemptErrorsField], &h); err != nil {
		t.Fatal(err)
	}
	if len(h) != drover.MaxAttemptErrors || h[0].ExitCode != 3 || h[len(h)-1].ExitCode != drover.MaxAttemptErrors+2 {
		t.Fatalf("want the last %d attempts, oldest first (exit 3 … %d), have %d from exit %d", drover.MaxAttemptErrors, drover.MaxAttemptErrors+2, len(h), h[0].ExitCode)
	}
	for _, f := range h {
		if len(f.StderrTail) != attemptErrorStderr {
			t.Fatalf("stderr in the history: want cut to %d bytes, have %d", attemptErrorStderr, len(f.StderrTail))
		}
	}
	var last drover.Failure
	if err := json.Unmarshal(m.Extra[lastErrorField], &last); err != nil || last.ExitCode != drover.MaxAttemptErrors+2 {
		t.Fatalf("last_error: want the last attempt, have %+v, %v", last, err)
	}
}

// The committer carries each queue's note of its records' bucket from one
// trim to the next (drover.RecordBucket): every request with records holds
// the note the queue's last records were answered with, so that the
// records after the first skip finding and counting the bucket (issue 43).
func TestRecordsCarryTheNoteTheirLastTrimAnswered(t *testing.T) {
	log := newMemLog()
	for i := 0; i < 5; i++ {
		log.add("q", msg(fmt.Sprintf("a%d", i)))
	}
	w := newTestWorker(t, log, &scriptedExecutor{}, nil)
	if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	records := func(n int) func() bool {
		return func() bool {
			log.mu.Lock()
			defer log.mu.Unlock()
			return len(log.outcomes["q"]) >= n
		}
	}
	waitFor(t, "the first records", records(5))
	for round := 1; round <= 3; round++ { // later records, in later flushes
		for i := 0; i < 3; i++ {
			log.add("q", msg(fmt.Sprintf("r%d-%d", round, i)))
		}
		w.Wake("q")
		waitFor(t, fmt.Sprintf("round %d's records", round), records(5+3*round))
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.noteErrs) > 0 {
		t.Fatalf("records without the last note: %v", log.noteErrs)
	}
	if have := log.notes["q"]; have == "" {
		t.Fatal("no note answered")
	}
}
