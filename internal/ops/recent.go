package ops

import (
	"context"
	"encoding/json"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/queue"
)

// Recent is a queue's recently finished jobs and those failing now.
type Recent struct {
	// Finished are the newest outcome records (succeeded, revoked),
	// newest first.
	Finished []drover.Outcome `json:"finished"`
	// Retrying are the delayed messages waiting for another attempt,
	// with the error of the attempt that failed last.
	Retrying []RetryingJob `json:"retrying"`
}

// RetryingJob is a job whose last attempt failed and that waits to run
// again.
type RetryingJob struct {
	ID      string          `json:"id"`
	Task    string          `json:"task"`
	Attempt int             `json:"attempt"` // attempts made
	Due     *time.Time      `json:"due,omitempty"`
	Failure *drover.Failure `json:"last_failure,omitempty"`
}

// Recent reads q's recently finished jobs (up to limit outcome
// records) and its retrying jobs among the first delayed ones (limit),
// at a cost independent of the queue's size.
func (o Messages) Recent(ctx context.Context, q string, limit int) (Recent, error) {
	if err := o.knownQueue(ctx, q); err != nil {
		return Recent{}, err
	}
	fin, err := o.store.Jobs().RecentOutcomes(ctx, q, limit)
	if err != nil {
		return Recent{}, err
	}
	r := Recent{Finished: fin, Retrying: []RetryingJob{}}
	delayed, err := o.Delayed(ctx, q, 0, limit)
	if err != nil {
		return Recent{}, err
	}
	for _, m := range delayed {
		var env map[string]json.RawMessage
		var task string
		var attempt int
		if json.Unmarshal(m.Envelope, &env) != nil || json.Unmarshal(env["attempt"], &attempt) != nil || attempt == 0 {
			continue
		}
		json.Unmarshal(env["task"], &task)
		j := RetryingJob{ID: m.ID, Task: task, Attempt: attempt, Due: m.Due}
		var f drover.Failure
		if raw, ok := env[queue.LastErrorField]; ok && json.Unmarshal(raw, &f) == nil {
			j.Failure = &f
		}
		r.Retrying = append(r.Retrying, j)
	}
	return r, nil
}
