package check

import (
	"sort"
	"time"
)

// Parking (issue 31): an ordered queue with on_failure park pauses itself
// at a head that used its attempts; the harness resolves it (a retry, or a
// move to the dead letters) and records when. While a queue is parked no
// message behind its head may start.

// ParkedAhead is the invariant: a message after a parked head started
// between the park and the head's resolution.
const ParkedAhead Invariant = "parked-ahead"

// Park is one park of a queue, as the harness saw and resolved it.
type Park struct {
	Queue        string    `json:"queue"`
	HeadID       string    `json:"head_id"`
	HeadPosition int64     `json:"head_position"`
	ParkedAt     time.Time `json:"parked_at"` // the pause flag's time (the worker's clock)
	// ResolvedAt is when the harness retried or skipped the head; zero
	// when the run ended with the queue still parked.
	ResolvedAt time.Time `json:"resolved_at"`
	How        string    `json:"how"` // "retry", "skip" or "" (unresolved)
}

// checkParked counts the parks and reports every execution of a message
// after a parked head that started while the head was parked.
func (c *checker) checkParked() {
	c.r.Parks = len(c.in.Parks)
	if len(c.in.Parks) == 0 {
		return
	}
	byQueue := map[string][]Execution{}
	for _, e := range c.in.Executions {
		byQueue[e.Queue] = append(byQueue[e.Queue], e)
	}
	for _, p := range c.in.Parks {
		es := byQueue[p.Queue]
		sort.Slice(es, func(i, j int) bool { return es[i].Start.Before(es[j].Start) })
		if p.ResolvedAt.IsZero() {
			// The harness's retry may have taken effect with its answer
			// lost to a fault (it then sees the queue no longer parked and
			// never records the resolution). A failing head logs no
			// execution; only the retry's edited args make it run. So its
			// first logged run after the park is the resolution.
			for _, e := range es {
				if e.ID == p.HeadID && !e.Start.Before(p.ParkedAt) {
					p.ResolvedAt, p.How = e.Start, "retry (seen run)"
					break
				}
			}
		}
		if p.How == "" {
			c.r.ParksUnresolved++
		}
		end := p.ResolvedAt
		if end.IsZero() {
			end = time.Unix(1<<40, 0) // parked until the end of the run
		}
		// The harness notes the resolution when its retry call returns;
		// the retry takes effect before that, and the head runs at once
		// (the queue is ordered: nothing after it runs before it). The
		// park ended no later than the head's first run after it.
		for _, e := range es {
			if e.ID == p.HeadID && !e.Start.Before(p.ParkedAt) {
				if e.Start.Before(end) {
					end = e.Start
				}
				break
			}
		}
		for _, e := range es {
			if e.Position > p.HeadPosition && !e.Start.Before(p.ParkedAt) && e.Start.Before(end) {
				c.r.violate(ParkedAhead, "%s/%s (position %d) started at %s while the queue was parked at %s (position %d) from %s until %s",
					e.Queue, e.ID, e.Position, e.Start.Format(time.RFC3339Nano), p.HeadID, p.HeadPosition,
					p.ParkedAt.Format(time.RFC3339Nano), p.ResolvedAt.Format(time.RFC3339Nano))
			}
		}
	}
}
