package worker

import "sort"

// StateRunning is State with only the owned queues that run a task now,
// with their in-flight tasks (/debug/state?queues=running): what the
// console's fleet-wide view of running tasks needs, without every owned
// queue's state (tens of megabytes at 25,000 queues).
func (w *Worker) StateRunning() State {
	st := w.stateHeader()
	now := w.cfg.Clock.Now()
	st.Queues = []QueueState{}
	for _, l := range w.loops() {
		l.mu.Lock()
		running := len(l.inflight) > 0
		l.mu.Unlock()
		if !running {
			continue
		}
		qs := l.state(now)
		qs.Paused = w.blocked(l.name)
		st.Queues = append(st.Queues, qs)
	}
	sort.Slice(st.Queues, func(i, j int) bool { return st.Queues[i].Name < st.Queues[j].Name })
	return st
}
