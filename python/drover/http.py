"""The HTTP producer: enqueue, status and revoke over `drover web`'s
/api/v1 (docs/http-api.md) with a token, standard library only."""

from __future__ import annotations

import datetime
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterable, List, Optional

from .errors import DroverError, InvalidArgument
from .types import Job
from .validate import check_job, check_queue, encode_json


class HTTPError(DroverError):
    """The API answered with an error status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _job(j: Job, queue: Optional[str] = None, index: Optional[int] = None) -> Dict[str, Any]:
    """The API's job body for j, sent to queue (default j.queue); refuses,
    as the Redis client does, what the API would refuse (drover.validate)."""
    if not isinstance(j, Job):
        raise InvalidArgument("job", f"want a drover.Job, have {type(j).__name__}", index)
    check_job(j.queue if queue is None else queue, j.task, j.id, j.delay, j.due,
              j.max_attempts, j.headers, index)
    d: Dict[str, Any] = {"task": j.task}
    if j.args is not None:
        encode_json("args", j.args, index)
        d["args"] = j.args
    if j.id is not None:
        d["id"] = j.id
    if j.headers:
        d["headers"] = dict(j.headers)
    if j.max_attempts:
        d["max_attempts"] = j.max_attempts
    if j.due is not None:
        d["at"] = j.due.astimezone(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
    elif j.delay:
        d["in"] = "%dms" % int(j.delay * 1000)
    return d


class HTTPClient:
    """A Drover producer over HTTP:

        c = drover.HTTPClient("http://127.0.0.1:8080", token)
        c.enqueue("emails", "send", {"to": "a@example.com"})

    token is a producer token (`drover web token NAME producer`)."""

    def __init__(self, url: str, token: str, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/") + "/api/v1"
        self.token = token
        self.timeout = timeout

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body, allow_nan=False).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        req.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            try:
                msg = json.load(e).get("error", "")
            except ValueError:
                msg = e.reason
            raise HTTPError(e.code, f"{method} {path}: {msg}") from None
        return json.loads(raw) if raw else None

    def enqueue(self, queue: str, task: str, args: Any = None, *, id: Optional[str] = None,
                delay: Optional[float] = None, due: Optional[datetime.datetime] = None,
                max_attempts: int = 0, headers: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
        """Enqueue one job; returns the API's answer (id, position or
        delayed/due_at, or duplicate). Raises InvalidArgument, sending
        nothing, for a job the API would refuse."""
        if headers is not None and not isinstance(headers, dict):
            raise InvalidArgument("headers", f"want a dict of str to str, have {type(headers).__name__}")
        j = Job(queue, task, args, id, delay, due, max_attempts, dict(headers or {}))
        return self.call("POST", f"/queues/{_q(queue)}/jobs", _job(j))

    def enqueue_many(self, queue: str, jobs: Iterable[Job]) -> Any:
        """Enqueue a batch to one queue (each job's own queue is ignored) in
        one request; every job is checked before it is sent."""
        check_queue(queue)
        return self.call("POST", f"/queues/{_q(queue)}/jobs",
                         {"jobs": [_job(j, queue, i) for i, j in enumerate(jobs)]})

    def status(self, queue: str, id: str) -> Dict[str, Any]:
        """Where the job is now (the fields of `drover ctl job --json`)."""
        return self.call("GET", f"/queues/{_q(queue)}/jobs/{_q(id)}")

    def revoke(self, queue: str, id: str) -> Any:
        """Revoke a delayed job (recorded `revoked`, by the token's name)."""
        return self.call("DELETE", f"/queues/{_q(queue)}/jobs/{_q(id)}")
