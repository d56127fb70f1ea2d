"""The producer's estimate of Redis's clock, which the lone enqueue scripts
take instead of calling TIME themselves. The Go producer's is
queue/redis_clock.go."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional, Tuple

import redis

READING_TTL = 5.0  # seconds one reading of TIME serves as the estimate's base


class RedisClock:
    """Estimates Redis's clock (TIME, in µs since the epoch) as the last
    reading of TIME plus the local monotonic time since, reading TIME again
    at most once every READING_TTL seconds. The local clock drifts from
    Redis's by parts per million, so the estimate stays within a round trip
    and some µs of Redis's clock; it is a hint: the scripts keep positions
    strictly increasing whatever it says (docs/redis-schema.md, "The Go
    client's one-message script").

    Safe to share between threads: at most one caller at a time reads TIME,
    the others use the older reading meanwhile, or none. monotonic is the
    local clock in seconds (injected by tests)."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        # (local time of the reading, Redis's clock in µs), replaced whole.
        self._reading: Optional[Tuple[float, int]] = None
        self._busy = threading.Lock()  # held by the caller reading TIME

    def now(self, r: Any) -> int:
        """The estimate in µs, reading TIME on r first when the last reading
        is READING_TTL old (or there is none). Returns 0, "no estimate",
        when there is no usable reading: none yet while another thread
        reads TIME, TIME failed, or the local clock is before the
        reading's. It blocks for one round trip when it reads TIME, and
        never raises for a failure of TIME (the script then reads TIME
        itself, and the enqueue reports what is wrong with the server)."""
        reading = self._reading
        age = -1.0
        if reading is not None:
            age = self._monotonic() - reading[0]
            if 0 <= age < READING_TTL:
                return reading[1] + round(age * 1_000_000)
        if not self._busy.acquire(blocking=False):
            if reading is not None and age >= 0:
                return reading[1] + round(age * 1_000_000)  # being read again: still close
            return 0
        try:
            try:
                seconds, micros = r.time()
                us = int(seconds) * 1_000_000 + int(micros)
            except (redis.RedisError, OSError, ValueError, TypeError):
                return 0
            # Redis read its clock between sent and received: taking
            # received as the reading's local time keeps the estimate from
            # running ahead of Redis's clock (it lags by up to the round
            # trip), as the Go producer does.
            self._reading = (self._monotonic(), us)
            return us
        finally:
            self._busy.release()
