// Package rebalance holds the pure assignment strategies that decide which
// member owns which queue: sticky (the default), range and round-robin.
//
// A Strategy maps an Input (the previous assignment, the live members with
// capacity and tags, the queues with weight and required tags) to a Result
// (queue → member, plus the queues no member is eligible for). Strategies do
// no I/O, read no clock and keep no state; the rebalance leader in package
// coordinator calls one after the settle window and writes the Result to
// /assignment. ByName returns a strategy by its configured name, and Moves
// lists what changed between two assignments.
//
// # Rules shared by every strategy
//
//   - A member is eligible for a queue when it offers every tag the queue
//     requires. Every queue with at least one eligible member is assigned to
//     exactly one eligible member; the others are listed in
//     Result.Unassignable, sorted, and appear nowhere else.
//   - Capacity below 1 counts as 1 and weight below 1 as 1; values above
//     MaxCapacity and MaxWeight count as those limits.
//   - The result depends only on the content of the Input: members, queues
//     and tags may come in any order and Previous is only looked up, never
//     iterated, so the same fleet always yields the same assignment.
//   - Names must be unique and non-empty; otherwise Assign fails with
//     ErrInvalidInput. (Two live member nodes with the same name, such as a
//     restarted worker whose old session has not yet expired, must be merged
//     by the caller.)
//
// # sticky
//
// Sticky keeps every queue where it is unless balance needs it to move. A
// member's load is the sum of its queues' weights. Without tag constraints
// (every member eligible for every queue) member i's ideal load is
//
//	tᵢ = W·cᵢ/C
//
// with W the total weight of the assignable queues, cᵢ the member's capacity
// and C the total capacity, and sticky guarantees for every member
//
//	|loadᵢ − tᵢ| < w_max      (w_max: the largest queue weight)
//
// whatever the previous assignment was. With unit weights this means every
// member owns ⌊tᵢ⌋ or ⌈tᵢ⌉ queues, and then sticky is also optimal in moves:
// the number of queues that change owner (counting queues that had no live
// owner) is the minimum any assignment within the bound needs,
//
//	O + max(Σ max(0, Pᵢ − ⌈tᵢ⌉), Σ max(0, ⌊tᵢ⌋ − Pᵢ) − O, 0)
//
// where Pᵢ is the number of queues member i owned before and O the number of
// queues without a live eligible previous owner. In particular:
//
//   - re-running on its own result moves nothing;
//   - a member joining takes only its share: every move goes to it (or to a
//     member that owned nothing before, which the strategy cannot tell from a
//     joiner) until it holds its share tᵢ, and it ends within the bound;
//   - a member leaving moves only its own queues, unless the bound forces
//     more: when members own only a few queues each, a member can fall a
//     whole queue below its new ideal and must be topped up. With unit
//     weights and equal capacities that cannot happen once Q ≥ (n−1)² for Q
//     queues and n members before the leave.
//
// With weights the bound still holds and the repair stops at the first state
// inside it, moving heavy queues first, but the count of moves is not proven
// minimal. The bound is deliberately loose for mixed weights (one max weight
// either way), which keeps moves rare.
//
// When tags restrict eligibility the exact ideal is a flow problem; sticky
// instead takes as targets the loads of a greedy fresh placement (queues of
// the most constrained tag sets and the heaviest first, each onto the eligible
// member whose load per unit of capacity stays lowest) and approaches them
// with the same passes, plus chains of moves through other members (a gpu
// member hands a plain queue to an idle plain member and takes a gpu queue
// from an overloaded gpu member) when no single eligible move helps.
// Eligibility, determinism and "re-running moves nothing" still hold;
// balance is best effort, reached in the tests' clean tag splits.
//
// The algorithm, in exact integer arithmetic (targets scaled by C):
//
//  1. keep: every queue whose previous owner is present and eligible stays.
//  2. place: the other queues (new, or orphaned by a member that left or lost
//     a tag), most constrained and heaviest first, each go to the eligible
//     member furthest below its target.
//  3. repair: while a member is w_max or more above its target it gives a
//     queue away, preferring a receiver that is w_max or more below its
//     target, then one already gaining queues in this round or owning none,
//     then the least loaded per unit of capacity; then, while a member is
//     w_max or more below its target it takes a queue from the member
//     furthest above its target. A moved queue is one that already moved in
//     this round if possible (moving it again costs nothing), else the
//     heaviest; among equal weights one Input.Idle names (nothing running,
//     no backlog), then the lowest move rank (the name's FNV-1a 32 hash
//     with its bits reversed, then its FNV-1a 64 hash: the queues of one
//     chunk of the member's share in the ZooKeeper layout come first) —
//     never the first by name, which made the same queue move at every
//     rebalance beside it. Each move lowers the sum of squared distances to the targets,
//     so the repair ends, and no move pushes another member out of the bound.
//
// Cost: O(Q log Q + Q·M) for Q queues and M members plus O(M) per repair
// move; 100 members × 10,000 queues take a few milliseconds (see the
// benchmarks).
//
// Without tags, the same result is reached from less: a Placer (the loads
// of an assignment Sticky computed) places new queues as pass 2 would
// (Placer.Place), and Placer.Reassign computes a change of members by the
// three passes over only the queues of the members gone and, of each
// member above its new target, the surplus + 2 queues it would give first:
// one hash per assigned queue and a computation that grows with the queues
// moved (the rebalance leader's join, leave and crash).
//
// # range
//
// Range is Kafka's classic assignor: queues are grouped by the set of members
// eligible for them (without tag constraints all queues are one group, like
// one topic); within a group the queues sorted by name are cut into
// contiguous ranges over the group's members sorted by name, the first n%e
// members getting one extra. Without tag constraints every member owns ⌊Q/M⌋
// or ⌈Q/M⌉ queues; with several groups the extras pile up on the first
// members (Kafka's range skew). It ignores capacity, weight and the previous
// assignment, so a join or leave reshuffles about half of the queues.
//
// # round-robin
//
// RoundRobin deals the queues sorted by name over the members sorted by name,
// skipping members not eligible for a queue. Without tags every member owns
// ⌊Q/M⌋ or ⌈Q/M⌉ queues. It ignores capacity, weight and the previous
// assignment; a join or leave moves almost every queue.

package rebalance
