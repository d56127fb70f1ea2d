"""Plain data the client takes and returns."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Dict, Optional


@dataclass
class Job:
    """One message to enqueue. delay (seconds) or due (an aware datetime),
    not both, postpone it; id is an idempotency key when given. What each
    field accepts: drover.validate (the Go producers' rules)."""

    queue: str
    task: str
    args: Any = None
    id: Optional[str] = None
    delay: Optional[float] = None
    due: Optional[datetime.datetime] = None
    max_attempts: int = 0
    headers: Dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Durable:
    """The durable enqueue mode (the fleet's redis.durable): an enqueue is
    acknowledged only once `replicas` replicas confirm its write (WAIT; with
    aof, WAITAOF: the append-only file's fsync on the master and the
    replicas, Redis 7.2+) within `timeout` seconds; else OutcomeUnknown."""

    replicas: int = 1
    timeout: float = 0.5
    aof: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.replicas, int) or self.replicas < 1:
            raise ValueError(f"durable.replicas: want an int >= 1, have {self.replicas!r}")
        if not self.timeout > 0:
            raise ValueError(f"durable.timeout: want seconds > 0 (0 would wait forever), have {self.timeout!r}")


@dataclass
class JobStatus:
    """What `drover ctl job` shows. state is one of pending, delayed,
    retrying, succeeded, failed, dead, revoked, unknown."""

    queue: str
    id: str
    state: str = "unknown"
    task: str = ""
    attempt: int = 0
    position: int = 0
    ahead: Optional[int] = None
    due_at: Optional[str] = None
    finished_at: Optional[str] = None
    exit_code: Optional[int] = None
    error: str = ""
    stderr_tail: str = ""
    stdout_tail: str = ""
    member: str = ""
    by: str = ""
    duration_seconds: Optional[float] = None
    note: str = ""
    as_of: str = ""


@dataclass
class Schedule:
    """A scheduler entry (docs/scheduler.md): its name and definition."""

    name: str
    definition: Dict[str, Any]
    next_due: Optional[float] = None  # the index score: 0 to plan, inf parked
    meta: Optional[Dict[str, Any]] = None
