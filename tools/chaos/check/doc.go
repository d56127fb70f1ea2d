// Package check verifies the record of a chaos run: what was enqueued, what
// the task processes logged, which faults were injected when, the committed
// offsets sampled from ZooKeeper and the schedule entries' progress. It is
// pure: Check reads an Input and returns a Report; the harness
// (tools/chaos) gathers the Input and prints the Report.
//
// # Invariants
//
//   - Lost: every confirmed enqueue and every fired schedule slot ran at
//     least once.
//   - Ordered overlap: two executions of an ordered queue never overlap in
//     time (whoever ran them).
//   - Cross-worker overlap: executions of one queue by two different worker
//     processes overlap only when one of them ran on a worker under a fault
//     (a zombie: a stopped or cut-off worker that kept running a task it had
//     started, or started one before it learned its session was gone).
//   - Duplicates: a message that ran n > 1 times is excused only when at
//     least n−1 of its executions were "in flight at a fault" (see
//     Covered); two or more executions outside any fault window are a
//     violation.
//   - Ran after commit: an execution no fault covers never starts after an
//     offset sample of its queue covered its position (committed work is
//     never repeated, whatever the timing).
//   - Double enqueue: one message id never appears at two positions with the
//     same attempt (for a schedule slot: the slot fired twice).
//   - Schedules: every slot of every entry, from its first fired slot up to
//     the entry's next pending slot, fired (and ran); none fired twice.
//   - Offsets: a queue's committed offset never goes backwards (samples
//     ordered by the offset node's version), and after the drain every
//     queue's offset covers every message enqueued to it.
//
// # "In flight at a fault"
//
// An execution E on worker process P is covered by fault F when F hit P
// (a worker fault naming P, or a ZooKeeper fault, which hits every worker),
// F is of a kind that may legitimately repeat work (Effects), and
//
//	E.End   ≥ F.Start − Policy.CommitWindow   (E finished too recently to be committed before F)
//	E.Start ≤ F.End   + Effects[F.Kind].After (E started before P could learn that F cost it its session)
//
// The first bound is the commit interval and the contiguous-prefix rule: a
// completion is committed at the next commit (every 200 ms while work flows)
// once everything before it is done. The second is the time a worker may
// act after the fault ended before it notices its session is gone: a stopped
// worker resumed by SIGCONT runs for a poll interval before its session
// monitor reports the loss; a worker behind a cut link waits for 2/3 of the
// session timeout. A graceful SIGTERM restart, a Redis restart and a killed
// scheduler excuse nothing: they must not repeat or overlap any work.
package check
