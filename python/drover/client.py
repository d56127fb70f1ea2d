"""The Redis producer: enqueue, revoke, job status and schedules, with the
Lua scripts the Go code runs (generated from queue/scripts.go)."""

from __future__ import annotations

import datetime
import getpass
import json
import re
import socket
import time
from importlib import resources
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

try:
    import redis
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError(
        "drover.Client needs redis-py: apt-get install python3-redis "
        "(Debian; run with /usr/bin/python3) or pip install redis") from e

from .errors import DroverError, InvalidArgument, LayoutError, OutcomeUnknown
from .enqueue_plan import MAX_SCRIPT_BATCH  # noqa: F401 (drover.client.MAX_SCRIPT_BATCH, as before)
from .enqueue_plan import GENERAL, MANY, ONE, SPREAD, Message, plan
from .ids import new_id
from .redis_clock import RedisClock
from .types import Durable, Job, JobStatus, Schedule
from .validate import check_job, check_queue, encode_json

KNOWN_FOR = 600.0  # seconds a queue stays in Client._registered unused (one to two of these)
DEFAULT_DEDUPE_WINDOW_MS = 24 * 3600 * 1000
DEFAULT_OUTCOME_RETENTION_MS = 24 * 3600 * 1000
DEFAULT_OUTCOME_MAX = 10000


def _script(name: str) -> str:
    return resources.files("drover.scripts").joinpath(name).read_text(encoding="utf-8")


VERSIONS: Dict[str, int] = json.loads(_script("versions.json"))
LAYOUT_VERSION: int = VERSIONS["layout"]


def _rfc3339(t: datetime.datetime) -> str:
    t = t.astimezone(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%06dZ" % t.microsecond


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


try:  # optional: the current trace context goes into the headers
    from opentelemetry import propagate as _otel_propagate  # type: ignore
except ImportError:
    _otel_propagate = None


def _traceparent(headers: Dict[str, str]) -> Dict[str, str]:
    """Adds the current OpenTelemetry trace context when it is importable."""
    if _otel_propagate is None:
        return headers
    carrier: Dict[str, str] = {}
    _otel_propagate.inject(carrier)
    for k in ("traceparent", "tracestate"):
        if carrier.get(k) and k not in headers:
            headers[k] = carrier[k]
    return headers


class _Recent:
    """A set that forgets what was not used for a while: a name stays while
    it is added or found at least once a period, and goes one to two periods
    after its last use (two generations; both go when nothing was asked for
    two periods). The client remembers so the queues it added to
    <prefix>:queues: a per-key fleet's keys come and go, and a set of every
    queue ever sent to grew for as long as the client ran. A forgotten
    queue's next enqueue sends the SADD again. The Go producer's is
    queue/recent.go."""

    def __init__(self, period: float, clock=time.monotonic) -> None:
        self.period, self.clock = period, clock
        self.cur: set = set()
        self.old: set = set()
        self.turn_at = clock() + period

    def _turn(self) -> None:
        now = self.clock()
        if now >= self.turn_at:
            self.old = set() if now >= self.turn_at + self.period else self.cur
            self.cur = set()
            self.turn_at = now + self.period

    def __contains__(self, name: object) -> bool:
        self._turn()
        if name in self.cur:
            return True
        if name in self.old:
            self.cur.add(name)
            return True
        return False

    def update(self, names: Iterable[str]) -> None:
        self._turn()
        self.cur.update(names)

    def __len__(self) -> int:
        return len(self.cur | self.old)


class Client:
    """A Drover producer on Redis.

        c = drover.Client(redis.Redis(), prefix="drover")
        job_id, pos = c.enqueue("emails", "send", {"to": "a@example.com"})

    prefix is the fleet's redis.prefix. The client refuses (LayoutError) a
    Redis whose <prefix>:layout key names a version it does not speak.

    durable (a drover.Durable) turns on the durable enqueue mode, as the
    fleet's redis.durable does for the Go producers: an enqueue returns only
    once the replicas confirm its write, and raises OutcomeUnknown (naming
    the ids to enqueue again) when they do not within the bound
    (docs/semantics.md). Default None: acknowledged once the master has it."""

    def __init__(self, r: "redis.Redis", prefix: str = "drover",
                 dedupe_window_ms: int = DEFAULT_DEDUPE_WINDOW_MS, wakeups: bool = True,
                 check_layout: bool = True, durable: Optional[Durable] = None) -> None:
        if durable is not None and not isinstance(durable, Durable):
            raise InvalidArgument("durable", f"want a drover.Durable or None, have {type(durable).__name__}")
        self.r = r
        self.durable = durable
        self._waitaof_checked = False
        self.prefix = prefix
        self.dedupe_window_ms = int(dedupe_window_ms)
        self.wake_channel = prefix + ":wakeup-unowned" if wakeups else ""
        self._enqueue = r.register_script(_script("enqueue.lua"))
        self._enqueue_one = r.register_script(_script("enqueue_one.lua"))
        self._enqueue_many = r.register_script(_script("enqueue_many.lua"))
        self._enqueue_spread = r.register_script(_script("enqueue_spread.lua"))
        self._redis_now = RedisClock()  # the lone scripts' estimate of Redis's clock
        self._revoke = r.register_script(_script("revoke.lua"))
        self._record = r.register_script(_script("record_outcomes.lua"))
        self._status = r.register_script(_script("job_status.lua"))
        self._registered = _Recent(KNOWN_FOR)  # queues added to <prefix>:queues lately
        if check_layout:
            self.check_layout()

    @classmethod
    def from_url(cls, url: str = "redis://127.0.0.1:6379/0", **kw: Any) -> "Client":
        return cls(redis.Redis.from_url(url), **kw)

    def check_layout(self) -> None:
        """Raises LayoutError when <prefix>:layout names another version."""
        v = self.r.get(self.prefix + ":layout")
        if v is not None and int(v) != LAYOUT_VERSION:
            raise LayoutError(
                f"Redis {self.prefix!r} holds Drover layout v{int(v)}; this client speaks "
                f"v{LAYOUT_VERSION}: upgrade the client (docs/redis-schema.md, Compatibility)")

    def _keys(self, queue: str) -> Dict[str, str]:
        check_queue(queue)
        base = f"{self.prefix}:{{{queue}}}:"
        return {k: base + k for k in ("log", "msg", "seq", "delayed", "seen", "owner",
                                       "dead", "deadmsg", "done", "attempts")}

    # --- enqueue -----------------------------------------------------------

    def enqueue(self, queue: str, task: str, args: Any = None, *, id: Optional[str] = None,
                delay: Optional[float] = None, due: Optional[datetime.datetime] = None,
                max_attempts: int = 0, headers: Optional[Dict[str, str]] = None) -> Tuple[str, int]:
        """Enqueue one message. Returns (id, result): result is the position
        (> 0), 0 when delayed, -1 when the id was already known. Raises
        InvalidArgument, writing nothing, for a message the Go producers
        refuse (drover.validate)."""
        if headers is not None and not isinstance(headers, dict):
            raise InvalidArgument("headers", f"want a dict of str to str, have {type(headers).__name__}")
        job = Job(queue, task, args, id, delay, due, max_attempts, dict(headers or {}))
        try:
            return self.enqueue_many([job])[0]
        except InvalidArgument as e:  # one job: no index in the message
            raise InvalidArgument(e.field, e.problem) from None

    def enqueue_many(self, jobs: Iterable[Job]) -> List[Tuple[str, int]]:
        """Enqueue jobs (any queues) in one round trip. Returns (id, result)
        per job, in order. Every job is checked before anything is written:
        one refused job (InvalidArgument, with its index) writes none.

        A batch whose jobs all have generated ids and are due now goes
        through the lone scripts, as the Go producer's does (drover.enqueue_plan:
        a queue's messages in enqueue-many calls, the queues with one
        message together in enqueue-spread calls, with this client's
        estimate of Redis's clock); any other batch through the general
        script, one call per queue and up to 1000 messages."""
        jobs = list(jobs)
        messages: List[Message] = []
        now = _now()
        for i, j in enumerate(jobs):
            if not isinstance(j, Job):
                raise InvalidArgument("job", f"want a drover.Job, have {type(j).__name__}", i)
            check_job(j.queue, j.task, j.id, j.delay, j.due, j.max_attempts, j.headers, i)
            keyed = j.id is not None
            mid = j.id if keyed else new_id()
            env: Dict[str, Any] = {"id": mid, "queue": j.queue, "task": j.task}
            if j.args is not None:
                env["args"] = j.args
            env["attempt"] = 0
            if j.max_attempts:
                env["max_attempts"] = j.max_attempts
            env["enqueued_at"] = _rfc3339(now)
            headers = _traceparent(dict(j.headers or {}))
            if headers:
                env["headers"] = headers
            due_ms = 0
            if j.due is not None:
                due_ms = max(int(j.due.timestamp() * 1000), 1)  # as Go's dueMillis: before 1970 is 1
            elif j.delay:
                due_ms = int((time.time() + j.delay) * 1000)
            # Every other field is checked: only args can fail to encode.
            messages.append(Message(i, j.queue, mid, encode_json("args", env, i), due_ms, keyed))
        calls = plan(messages)
        estimate = ""
        if any(kind != GENERAL for kind, _ in calls):
            estimate = str(self._redis_now.now(self.r))  # one for the batch, as Go's
        sends = [self._script_call(kind, ms, estimate) for kind, ms in calls]
        queues = list(dict.fromkeys(m.queue for m in messages))
        register = [q for q in queues if q not in self._registered]
        if self.durable is not None:
            self._check_waitaof()
        if len(sends) == 1 and not register and self.durable is None:
            # The common case of a lone caller: one EVALSHA, no pipeline
            # (redis-py's pipeline adds a SCRIPT EXISTS round trip).
            script, keys, argv, _ = sends[0]
            replies = [script(keys=keys, args=argv)]
        else:
            pipe = self.r.pipeline(transaction=False)
            for script, keys, argv, _ in sends:
                script(keys=keys, args=argv, client=pipe)
            if register:
                pipe.sadd(self.prefix + ":queues", *register)
            if self.durable is not None:
                self._confirm(pipe)
            replies = pipe.execute()
            if register:
                self._registered.update(register)
            if self.durable is not None:
                why = self._unconfirmed(replies[-1])
                if why:
                    raise OutcomeUnknown([m.id for m in messages], why)
        out: List[Tuple[str, int]] = [("", 0)] * len(jobs)
        for (_, ms), (_, _, _, results), reply in zip(calls, sends, replies):
            for m, r in zip(ms, results(reply)):
                out[m.index] = (m.id, int(r))
        return out

    def _script_call(self, kind: str, ms: List[Message],
                     estimate: str) -> Tuple[Any, List[str], List[str], Callable[[Any], List[Any]]]:
        """One call of plan's: the script, its KEYS and ARGV (the scripts'
        doc comments in queue/scripts.go), and a function of its reply
        giving one result per message, in ms's order."""
        if kind == SPREAD:
            keys: List[str] = []
            argv = [self.wake_channel, estimate]
            for m in ms:
                k = self._keys(m.queue)
                keys += [k["log"], k["msg"], k["seq"], k["owner"]]
                argv += [m.queue, m.id, m.envelope, "-"]  # "-": read :owner, do not answer it
            return self._enqueue_spread, keys, argv, lambda reply: reply[0]  # {positions, routes}
        k = self._keys(ms[0].queue)
        if kind == ONE:
            m = ms[0]
            # No ARGV[6], the route: the script reads :owner. The Go
            # producer's route cache needs what this client does not see
            # (pattern subscribers, the member's liveness).
            argv = [self.wake_channel, m.queue, m.id, m.envelope, estimate]
            return self._enqueue_one, [k["log"], k["msg"], k["seq"], k["owner"]], argv, lambda reply: [reply]
        if kind == MANY:
            argv = [self.wake_channel, ms[0].queue, estimate]
            for m in ms:
                argv += [m.id, m.envelope]
            return self._enqueue_many, [k["log"], k["msg"], k["seq"], k["owner"]], argv, list
        argv = [str(self.dedupe_window_ms), self.wake_channel, ms[0].queue]
        for m in ms:
            argv += [m.id, m.envelope, str(m.due_ms), "1" if m.keyed else "0"]
        keys = [k["log"], k["msg"], k["seq"], k["delayed"], k["seen"], k["owner"]]
        return self._enqueue, keys, argv, list

    # --- durable mode (queue/durable.go) -----------------------------------

    def _check_waitaof(self) -> None:
        """With aof, refuses (before anything is written) a server without
        WAITAOF (before Redis 7.2)."""
        if not self.durable.aof or self._waitaof_checked:
            return
        version = str(self.r.info("server").get("redis_version", "0"))
        if _version_tuple(version) < (7, 2):
            raise DroverError(f"durable aof needs WAITAOF (Redis 7.2 or later) and this server does not "
                              f"have it (version {version}): upgrade, or use Durable(aof=False); nothing was enqueued")
        self._waitaof_checked = True

    def _confirm(self, pipe: Any) -> None:
        """Ends pipe with the replicas' confirmation, as the Go producer does:
        a barrier PUBLISH (replicated like a write, so that WAIT covers a
        duplicate's earlier write too), then WAIT or WAITAOF."""
        pipe.publish(self.prefix + ":durable-barrier", "")
        ms = max(1, int(self.durable.timeout * 1000))
        if self.durable.aof:
            pipe.execute_command("WAITAOF", 1, self.durable.replicas, ms)
        else:
            pipe.execute_command("WAIT", self.durable.replicas, ms)

    def _unconfirmed(self, reply: Any) -> str:
        """Why the confirmation's reply does not confirm ("" when it does)."""
        d = self.durable
        if d.aof:
            local, replicas = int(reply[0]), int(reply[1])
            if local < 1:
                return f"not in the master's append-only file within {d.timeout}s (is appendonly on?)"
            if replicas < d.replicas:
                return f"in the append-only file of {replicas} of {d.replicas} replicas within {d.timeout}s"
            return ""
        if int(reply) < d.replicas:
            return f"confirmed by {int(reply)} of {d.replicas} replicas within {d.timeout}s"
        return ""

    # --- revoke ------------------------------------------------------------

    def revoke(self, queue: str, id: str, by: Optional[str] = None,
               retention_ms: int = DEFAULT_OUTCOME_RETENTION_MS,
               max_records: int = DEFAULT_OUTCOME_MAX) -> bool:
        """Delete a delayed message and record the outcome `revoked` (with
        by, who revoked it), as an HTTP revoke does. Returns False,
        changing nothing, when the id is not delayed (unknown or already
        promoted). by defaults to user@host, as `drover ctl revoke`
        records it."""
        if by is None:
            by = _operator()
        k = self._keys(queue)
        if not self._revoke(keys=[k["log"], k["msg"], k["delayed"], k["seen"], k["attempts"]], args=[id]):
            return False
        rec: Dict[str, Any] = {"state": "revoked", "exit_code": -1, "finished_at": _rfc3339(_now())}
        if by:
            rec["by"] = by
        if retention_ms > 0:
            self._record(keys=[k["done"]], args=[max_records, retention_ms, id,
                                                  json.dumps(rec, separators=(",", ":"))])
        return True

    # --- status ------------------------------------------------------------

    def status(self, queue: str, id: str) -> JobStatus:
        """Where the job is now: the states and fields of `drover ctl job`,
        except `running` (which only ZooKeeper knows). Without the committed
        offset (ZooKeeper's), a message still in the log is `pending` until
        its outcome record says otherwise."""
        if not id:
            raise DroverError("empty id")
        k = self._keys(queue)
        r = self._status(keys=[k["log"], k["msg"], k["delayed"], k["dead"], k["deadmsg"], k["done"]],
                         args=[id, 0])
        now_us, due, pos, ahead, env, dead, deadrec, rec = (list(r) + [None] * 8)[:8]
        st = JobStatus(queue=queue, id=id,
                       as_of=_rfc3339(datetime.datetime.fromtimestamp(int(now_us) / 1e6, datetime.timezone.utc)))
        m = _json(env)
        if m:
            st.task, st.attempt = m.get("task", ""), m.get("attempt", 0)
        recd = _json(rec)
        record_is_newer = (recd is not None and pos is not None
                           and _parse_time(recd.get("finished_at", "")) > int(float(pos)))
        if due is not None:
            st.state = "delayed"
            st.due_at = _rfc3339(datetime.datetime.fromtimestamp(float(due) / 1000, datetime.timezone.utc))
            if m and m.get("attempt", 0) > 0:
                st.state = "retrying"
                _last_error(st, m)
        elif pos is not None and record_is_newer:
            st.position = int(float(pos))
            _from_record(st, recd or {})
        elif pos is not None:
            st.state, st.position, st.ahead = "pending", int(float(pos)), int(ahead or 0)
            if m and m.get("attempt", 0) > 0:
                _last_error(st, m)
        elif dead is not None:
            st.state = "dead"
            d = _json(deadrec) or {}
            # The record is the envelope plus the failure
            # (docs/redis-schema.md); older ones nest it under "message".
            msg = d.get("message") or d
            if msg.get("task"):
                st.task, st.attempt = msg.get("task", ""), msg.get("attempt", 0)
            f = d.get("failure") or d
            st.error, st.exit_code, st.stderr_tail = f.get("error", ""), f.get("exit_code"), f.get("stderr_tail", "")
            st.finished_at = f.get("failed_at") or _rfc3339(
                datetime.datetime.fromtimestamp(float(dead) / 1000, datetime.timezone.utc))
        elif recd is not None:
            _from_record(st, recd)
        return st

    # --- schedules (docs/scheduler.md, "Redis layout") ---------------------

    def _sched_keys(self, name: str) -> Tuple[str, str]:
        if not name:
            raise DroverError("empty schedule name")
        return self.prefix + ":schedule", f"{self.prefix}:sched:{name}"

    def schedule_put(self, name: str, definition: Dict[str, Any]) -> None:
        """Add or replace an entry: the definition first, then score 0 (the
        scheduler's leader plans it within its poll interval)."""
        for f in ("queue", "task", "schedule"):
            if not definition.get(f):
                raise DroverError(f"schedule {name}: definition needs {f!r}")
        index, h = self._sched_keys(name)
        self.r.hset(h, "definition", json.dumps(definition, separators=(",", ":")))
        self.r.zadd(index, {name: 0})

    schedule_add = schedule_put
    schedule_update = schedule_put

    def _set_enabled(self, name: str, enabled: bool) -> None:
        s = self.schedule_get(name)
        if s is None:
            raise DroverError(f"no schedule {name!r}")
        d = dict(s.definition)
        if enabled:
            d.pop("enabled", None)
        else:
            d["enabled"] = False
        self.schedule_put(name, d)

    def schedule_enable(self, name: str) -> None:
        self._set_enabled(name, True)

    def schedule_disable(self, name: str) -> None:
        self._set_enabled(name, False)

    def schedule_remove(self, name: str) -> bool:
        index, h = self._sched_keys(name)
        removed = self.r.zrem(index, name)
        self.r.delete(h)
        return bool(removed)

    def schedule_get(self, name: str) -> Optional[Schedule]:
        index, h = self._sched_keys(name)
        d, meta = self.r.hmget(h, "definition", "meta")
        if d is None:
            return None
        return Schedule(name, json.loads(d), self.r.zscore(index, name), _json(meta))

    def schedules(self) -> List[Schedule]:
        names = [n.decode() if isinstance(n, bytes) else n for n in self.r.zrange(self.prefix + ":schedule", 0, -1)]
        return [s for s in (self.schedule_get(n) for n in sorted(names)) if s is not None]


_FRACTION = re.compile(r"\.(\d+)")


def _version_tuple(v: str) -> Tuple[int, ...]:
    """(7, 0, 15) for "7.0.15"; parts that are not numbers count 0."""
    return tuple(int(p) if p.isdigit() else 0 for p in v.split("."))


def _parse_time(s: str) -> int:
    """An RFC 3339 time in µs since the epoch; 0 when it is not one."""
    try:
        s = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], s.replace("Z", "+00:00"), count=1)
        t = datetime.datetime.fromisoformat(s)
    except ValueError:
        return 0
    return int(t.timestamp()) * 1_000_000 + t.microsecond


def _operator() -> str:
    """user@host: who revoked, as drover ctl records it."""
    try:
        name = getpass.getuser()
    except Exception:  # no user name in this environment
        name = "unknown"
    return name + "@" + socket.gethostname()


def _json(v: Any) -> Optional[Dict[str, Any]]:
    if v is None or v is False:
        return None
    try:
        d = json.loads(v)
    except (TypeError, ValueError):
        return None
    return d if isinstance(d, dict) else None


def _from_record(st: JobStatus, rec: Dict[str, Any]) -> None:
    st.state = rec.get("state") or "succeeded"
    st.task = rec.get("task", st.task)
    st.attempt = rec.get("attempt", st.attempt)
    st.member, st.by = rec.get("member", ""), rec.get("by", "")
    st.duration_seconds, st.stdout_tail = rec.get("duration_seconds"), rec.get("stdout_tail", "")
    st.finished_at = rec.get("finished_at")
    if st.state == "succeeded":
        st.exit_code = rec.get("exit_code", 0)


def _last_error(st: JobStatus, m: Dict[str, Any]) -> None:
    f = m.get("last_error")
    if isinstance(f, dict):
        st.error, st.exit_code, st.stderr_tail = f.get("error", ""), f.get("exit_code"), f.get("stderr_tail", "")
