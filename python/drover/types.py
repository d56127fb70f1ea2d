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
