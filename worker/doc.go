// Package worker is Drover's runtime: it runs the queues this member owns,
// one loop per queue, and executes every task in a child process (or, opt-in,
// in process).
//
// A queue loop promotes due delayed messages, reads batches after the last
// fetched position (read-ahead), hands tasks to the worker's executor pool
// (a global capacity shared with weighted fairness between queues, and a
// per-queue concurrency), tracks completions, commits the lowest contiguous
// completed position through its fenced Claim and trims the log. It wakes on
// enqueue notifications instead of polling tightly.
//
// The package sees neither Redis nor ZooKeeper: it declares the ports it
// needs (Store, one required port with every storage ability; Claim;
// Executor), which package queue's store and the coordinator's claims
// implement on the root package's types
// (drover.LogEntry, drover.Backlog, drover.Claim); cmd/drover wires them in,
// and package fleet starts and stops queues as the assignment says.
//
// # Outcomes
//
// Exit 0 is success; 75 (EX_TEMPFAIL) asks for a retry; any other exit, a
// signal or a timeout is a failure. Retries and failures are retried with
// exponential backoff and jitter until the queue's max_attempts, then
// dead-lettered with the reason, exit code and stderr tail. An envelope that
// cannot be decoded is dead-lettered at once. An ordered queue runs one task
// at a time and retries it in place, so a failing task blocks the queue until
// it succeeds or is dead-lettered.
//
// # Losing a queue
//
// Stop drains a queue gracefully (in-flight tasks finish within the drain
// timeout, then the rest are killed), then releases the claim with the final
// offset. Abort (session lost, or a commit refused as fenced) kills in-flight
// tasks and writes nothing more to Redis or ZooKeeper for the queue: another
// member owns it now, and it will run the unfinished messages again.
package worker
