"""What an enqueue accepts, checked before anything is written.

The limits are the Go code's (queue.Rules in the Go module, generated into
drover/scripts/rules.json by `go run ./tools/pyscripts`; a Go test fails
while the committed file differs): queue names as drover.ValidateQueueName,
ids, task and max_attempts as Producer.Enqueue, args as JSON without NaN or
Infinity, delay and due as the HTTP API's in and at. This module only
applies them; every refusal is an InvalidArgument naming the field."""

from __future__ import annotations

import bisect
import datetime
import json
import math
from importlib import resources
from typing import Any, Dict, List, Optional, Tuple

from .errors import InvalidArgument

RULES: Dict[str, Any] = json.loads(
    resources.files("drover.scripts").joinpath("rules.json").read_text(encoding="utf-8"))

_QUEUE = RULES["queue"]
_FORBIDDEN: List[Tuple[int, int]] = [(lo, hi) for lo, hi in _QUEUE["forbidden"]]
_FORBIDDEN_LO = [lo for lo, _ in _FORBIDDEN]
_ID_FORBIDDEN: List[Tuple[int, int]] = [(lo, hi) for lo, hi in RULES["id"]["forbidden"]]
_ID_FORBIDDEN_LO = [lo for lo, _ in _ID_FORBIDDEN]
_EXCLUSIVE = [tuple(p) for p in RULES["exclusive"]]


def _text(field: str, v: Any, index: Optional[int]) -> bytes:
    """v as UTF-8, refusing what is not a str or not encodable (a lone
    surrogate: Go would read it as U+FFFD, another string)."""
    if not isinstance(v, str):
        raise InvalidArgument(field, f"want a string, have {type(v).__name__}", index)
    try:
        return v.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidArgument(field, f"not valid UTF-8 text (a lone surrogate at index {e.start})", index) from None


def _forbidden(cp: int, ranges: List[Tuple[int, int]] = _FORBIDDEN, los: List[int] = _FORBIDDEN_LO) -> bool:
    i = bisect.bisect_right(los, cp) - 1
    return i >= 0 and ranges[i][1] >= cp


def check_queue(name: Any, field: str = "queue", index: Optional[int] = None) -> None:
    """Refuses a name drover.ValidateQueueName refuses: empty, over
    max_bytes bytes, reserved, or holding '/', ':', '{', '}', white space
    or control characters."""
    b = _text(field, name, index)
    if not b:
        raise InvalidArgument(field, "empty", index)
    if len(b) > _QUEUE["max_bytes"]:
        raise InvalidArgument(field, f"{len(b)} bytes, at most {_QUEUE['max_bytes']}", index)
    if name in _QUEUE["reserved"]:
        raise InvalidArgument(field, f"{name!r} is reserved", index)
    at = 0
    for ch in name:
        if _forbidden(ord(ch)):
            raise InvalidArgument(
                field, f"{name!r} holds {ch!r} (U+{ord(ch):04X}) at byte {at}: a queue name holds no "
                       "'/', ':', '{', '}', white space, control characters or bidirectional controls", index)
        at += len(ch.encode("utf-8"))


def check_job(queue: Any, task: Any, id: Any = None, delay: Any = None, due: Any = None,
              max_attempts: Any = 0, headers: Any = None, index: Optional[int] = None) -> None:
    """Refuses a message any Go producer would refuse (args are checked
    when encoded: encode_json). id None means a generated id."""
    check_queue(queue, "queue", index)
    if len(_text("task", task, index)) < RULES["task"]["min_bytes"]:
        raise InvalidArgument("task", "required, have an empty string", index)
    if id is not None:
        b = _text("id", id, index)
        if not b:
            raise InvalidArgument("id", "empty: pass None for a generated id", index)
        if len(b) > RULES["id"]["max_bytes"]:
            raise InvalidArgument("id", f"{len(b)} bytes, at most {RULES['id']['max_bytes']}", index)
        at = 0
        for ch in id:
            if _forbidden(ord(ch), _ID_FORBIDDEN, _ID_FORBIDDEN_LO):
                raise InvalidArgument("id", f"holds U+{ord(ch):04X} at byte {at}: an id holds no control "
                                            "or bidirectional characters", index)
            at += len(ch.encode("utf-8"))
    ma = RULES["max_attempts"]
    if max_attempts is None:  # as JSON null in Go: the default, 0
        max_attempts = 0
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int):
        raise InvalidArgument("max_attempts", f"want an integer, have {type(max_attempts).__name__}", index)
    if not ma["min"] <= max_attempts <= ma["max"]:
        raise InvalidArgument("max_attempts", f"{max_attempts}: want {ma['min']} to {ma['max']} "
                                              "(0: the queue's default)", index)
    if headers is not None:
        if not isinstance(headers, dict):
            raise InvalidArgument("headers", f"want a dict of str to str, have {type(headers).__name__}", index)
        for k, v in headers.items():
            _text("headers", k, index)
            _text(f"headers[{k!r}]", v, index)
    given = {"delay": delay is not None, "due": due is not None}
    for a, b in _EXCLUSIVE:
        if given.get(a) and given.get(b):
            raise InvalidArgument(b, f"give {a} or {b}, not both", index)
    if delay is not None:
        d = RULES["delay"]
        if isinstance(delay, bool) or not isinstance(delay, (int, float)):
            raise InvalidArgument("delay", f"want seconds (int or float), have {type(delay).__name__}", index)
        if not math.isfinite(delay) or not d["min_seconds"] <= delay <= d["max_seconds"]:
            raise InvalidArgument("delay", f"{delay!r}: want finite seconds from {d['min_seconds']} "
                                           f"to {d['max_seconds']}", index)
    if due is not None:
        if not isinstance(due, datetime.datetime):
            raise InvalidArgument("due", f"want an aware datetime, have {type(due).__name__}", index)
        if due.tzinfo is None or due.utcoffset() is None:
            raise InvalidArgument("due", "want an aware datetime (with tzinfo), have a naive one", index)


def encode_json(field: str, v: Any, index: Optional[int] = None) -> str:
    """v as compact JSON; refuses what JSON cannot hold (NaN, Infinity,
    objects json does not encode, cycles), as Go's JSON would."""
    try:
        return json.dumps(v, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise InvalidArgument(field, f"not JSON-encodable: {e}", index) from None


def check_args(args: Any, index: Optional[int] = None) -> None:
    """Refuses args that are not JSON (encode_json)."""
    encode_json("args", args, index)
