package check

// Key churn (issue 40, kind KeyChurn): the keys of a retiring queue family
// are registered, run, go idle, are retired and come back throughout the
// run. Their messages are checked as every other; what is particular to
// them is that a retired key's offset node is gone.

// ChurnSummary summarises the family's keys over a run.
type ChurnSummary struct {
	Keys         int `json:"keys"`           // keys fed (cycling ones and bursts)
	Retirements  int `json:"retirements"`    // retirements of cycling keys the harness saw
	Returns      int `json:"returns"`        // keys enqueued to again after a retirement
	Bursts       int `json:"bursts"`         // bursts of new keys (the kind's injections)
	RetiredAtEnd int `json:"retired_at_end"` // keys retired when the run ended
	LookupErrors int `json:"lookup_errors"`  // failed registry reads (retried)
}

// retiredQueue reports whether q was retired when the run ended: it
// retired only once empty, so it has no final offset to check.
func (c *checker) retiredQueue(q string) bool { return c.in.Retired[q] }
