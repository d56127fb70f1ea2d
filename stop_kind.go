package drover

// StopKind says why a member gives a queue up, which decides how long the
// queue's running tasks may take before the claim is released
// (docs/semantics.md, "Moves").
type StopKind int

const (
	// StopLeave: the member stops (SIGTERM), leaves the fleet, or gives its
	// queues up because it cannot reach Redis. Running tasks get the drain
	// timeout; those still running then are killed, and run again under
	// the next owner. The zero value.
	StopLeave StopKind = iota
	// StopPlanned: the queue moves for balance while the member stays in
	// the fleet with its session. No task starts; the running ones finish,
	// each bounded by its own timeout (and the executor's kill grace), never
	// by the drain timeout; then the claim is released and the next owner
	// claims. Nothing is killed, nothing runs twice.
	StopPlanned
)

// String names the kind in logs.
func (k StopKind) String() string {
	if k == StopPlanned {
		return "planned"
	}
	return "leave"
}
