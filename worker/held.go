package worker

import "sort"

// StateRateLimited is State with only the names of the owned queues whose
// work waits for a token of their rate limit (QueueNames), for `ctl status`
// and the console (/debug/state?queues=rate_limited): a queue held back on
// purpose is shown as rate-limited, not as lagging for no reason. It reads
// one flag per owned queue.
func (w *Worker) StateRateLimited() State {
	st := w.stateHeader()
	w.mu.Lock()
	held := []string{}
	for name, l := range w.queues {
		if l.rateHeld.Load() {
			held = append(held, name)
		}
	}
	w.mu.Unlock()
	sort.Strings(held)
	st.QueueNames = held
	return st
}
