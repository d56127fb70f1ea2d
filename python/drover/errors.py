"""Errors the client raises."""

from typing import Optional


class DroverError(Exception):
    """A call Drover refused or could not complete."""


class LayoutError(DroverError):
    """The Redis holds a Drover layout version this client does not speak."""


class InvalidArgument(DroverError, ValueError):
    """A message (or a queue name) the Go producers would refuse; nothing
    was written. field names the argument ("queue", "id", "task", "args",
    "headers", "max_attempts", "delay", "due"); index is the job's place in
    an enqueue_many batch (None for a single call); problem says what is
    wrong."""

    def __init__(self, field: str, problem: str, index: Optional[int] = None) -> None:
        self.field = field
        self.problem = problem
        self.index = index
        where = f"jobs[{index}]: " if index is not None else ""
        super().__init__(f"{where}{field}: {problem}")


class OutcomeUnknown(DroverError):
    """An enqueue Redis may hold but did not confirm as replicated (the
    client's durable mode): a failover now could lose it. ids are every job
    of the call, generated ids included; enqueueing them again is safe (a job
    already in is answered -1, duplicate, and not written twice), and the
    retry is acknowledged only once the replicas confirm it."""

    def __init__(self, ids: "list[str]", reason: str) -> None:
        self.ids = list(ids)
        self.reason = reason
        super().__init__(f"outcome unknown: enqueue of {', '.join(self.ids)} not confirmed by the "
                         f"replicas ({reason}): enqueue the same ids again")
