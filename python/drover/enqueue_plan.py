"""Which enqueue script calls a batch of checked messages goes in: the
Go producer's dispatch (queue/enqueue.go, enqueueSpread), as a pure
function the client turns into EVALSHAs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

MAX_SCRIPT_BATCH = 1000  # messages per call of one queue (docs/redis-schema.md)
MAX_SPREAD = 256  # queues per enqueue-spread call (Go's spreadBatch)

# The kinds of call, one per script.
GENERAL = "general"  # enqueue.lua: one queue, any messages
ONE = "one"  # enqueue_one.lua: one generated-id message due now
MANY = "many"  # enqueue_many.lua: several of them to one queue
SPREAD = "spread"  # enqueue_spread.lua: one of them to each of several queues


@dataclass(frozen=True)
class Message:
    """One checked job, ready to send."""

    index: int  # its place in the caller's batch
    queue: str
    id: str
    envelope: str  # JSON
    due_ms: int  # unix ms; 0 = now
    keyed: bool  # the caller chose the id


def plan(messages: Sequence[Message]) -> List[Tuple[str, List[Message]]]:
    """The script calls of one batch, each a kind and its messages in the
    batch's order. Every message of a queue goes in calls of one kind, in
    its order, so a queue's positions follow the batch.

    When every message has a generated id and is due now, the batch goes
    through the lone scripts, as the Go producer sends it: a queue with
    several messages in enqueue-many calls of its own (MAX_SCRIPT_BATCH a
    call; a last call of one message in enqueue-one), the queues with one
    message together in enqueue-spread calls (MAX_SPREAD queues a call; a
    call that would hold one queue is an enqueue-one call). Any other
    batch goes in general calls, one queue and up to MAX_SCRIPT_BATCH
    messages each: never split between the two, so that a caller-chosen id
    or a due time cannot reorder the messages around it."""
    by_queue: Dict[str, List[Message]] = {}
    for m in messages:
        by_queue.setdefault(m.queue, []).append(m)
    calls: List[Tuple[str, List[Message]]] = []
    if any(m.keyed or m.due_ms != 0 for m in messages):
        for ms in by_queue.values():
            calls += [(GENERAL, ms[s:s + MAX_SCRIPT_BATCH]) for s in range(0, len(ms), MAX_SCRIPT_BATCH)]
        return calls
    singles = [ms[0] for ms in by_queue.values() if len(ms) == 1]
    for s in range(0, len(singles), MAX_SPREAD):
        chunk = singles[s:s + MAX_SPREAD]
        calls.append((ONE if len(chunk) == 1 else SPREAD, chunk))
    for ms in by_queue.values():
        if len(ms) == 1:
            continue
        for s in range(0, len(ms), MAX_SCRIPT_BATCH):
            chunk = ms[s:s + MAX_SCRIPT_BATCH]
            calls.append((ONE if len(chunk) == 1 else MANY, chunk))
    return calls
