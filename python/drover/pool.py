"""Serve Python functions as a Drover pooled child (docs/process-pool.md).

Standard library only. A pooled route's program calls serve() with its
handlers; the worker starts it with the task pipe on fd 3 and the result pipe
on fd 4 and sends one task at a time:

    import drover.pool as drover_pool   # or: import drover_pool (the shim)

    def resize(envelope, ctx):
        print("resizing", envelope["args"]["path"])   # the task's log
        if not ready():
            raise drover_pool.Retry("not uploaded yet")

    if __name__ == "__main__":
        drover_pool.serve({"resize": resize})

A handler gets the envelope (a dict) and a Context. Returning is success,
raising Retry asks for a retry, any other exception is a failure (its
traceback goes to stderr). The key "*" serves any task without a handler of
its own.
"""

import datetime
import json
import os
import struct
import sys
import traceback

PROTOCOL = 1
TASK_FD = 3
RESULT_FD = 4
MAX_FRAME = 1 << 31


class Retry(Exception):
    """Raised by a handler: try the task again later (exit 75 per task)."""


class ProtocolError(Exception):
    """The worker sent something that is not a task frame."""


class Context:
    """The task frame's fields: what per-task mode puts in DROVER_*."""

    __slots__ = ("queue", "task", "id", "attempt", "position", "deadline", "seq",
                 "traceparent", "tracestate")

    def __init__(self, frame):
        self.seq = frame["seq"]
        self.queue = frame.get("queue", "")
        self.task = frame.get("task", "")
        self.id = frame.get("id", "")
        self.attempt = frame.get("attempt", 0)
        self.position = frame.get("position", 0)
        self.deadline = parse_deadline(frame.get("deadline"))
        # The task span's W3C trace context (TRACEPARENT per task), or "".
        self.traceparent = frame.get("traceparent", "")
        self.tracestate = frame.get("tracestate", "")

    def remaining(self):
        """Seconds until the deadline, or None when the task has none."""
        if self.deadline is None:
            return None
        now = datetime.datetime.now(datetime.timezone.utc)
        return (self.deadline - now).total_seconds()


def parse_deadline(s):
    """Parse RFC 3339 with up to nanoseconds into an aware UTC datetime."""
    if not s:
        return None
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    # fromisoformat takes at most 6 fractional digits before Python 3.11.
    head, sep, frac = s.partition(".")
    if sep:
        digits = ""
        rest = frac
        while rest and rest[0].isdigit():
            digits, rest = digits + rest[0], rest[1:]
        s = head + "." + (digits[:6].ljust(6, "0")) + rest
    return datetime.datetime.fromisoformat(s).astimezone(datetime.timezone.utc)


def read_exact(fd, n):
    """Read n bytes from fd; b"" at a clean end of file before any byte."""
    chunks = []
    got = 0
    while got < n:
        b = os.read(fd, n - got)
        if not b:
            if got == 0:
                return b""
            raise ProtocolError("frame cut short: %d of %d bytes" % (got, n))
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def read_frame(fd):
    """Return the next frame's JSON object, or None at end of file."""
    head = read_exact(fd, 4)
    if not head:
        return None
    if len(head) < 4:
        raise ProtocolError("frame header cut short")
    (n,) = struct.unpack(">I", head)
    if n > MAX_FRAME:
        raise ProtocolError("frame of %d bytes" % n)
    body = read_exact(fd, n)
    if len(body) < n:
        raise ProtocolError("frame cut short")
    return json.loads(body.decode("utf-8"))


def write_frame(fd, obj):
    """Write one frame: a 4-byte big-endian length, then the JSON."""
    body = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    data = struct.pack(">I", len(body)) + body
    while data:
        n = os.write(fd, data)
        data = data[n:]


def run_one(handlers, frame):
    """Run the handler for one task frame and return its result frame."""
    ctx = Context(frame)
    result = {"type": "result", "seq": ctx.seq}
    handler = handlers.get(ctx.task) or handlers.get("*")
    if handler is None:
        result["outcome"] = "failure"
        result["message"] = "no Python handler for task %r" % ctx.task
        return result
    try:
        handler(frame.get("envelope"), ctx)
        result["outcome"] = "success"
    except Retry as e:
        result["outcome"] = "retry"
        result["message"] = str(e)
    except Exception as e:  # the task failed, the child carries on
        traceback.print_exc()
        result["outcome"] = "failure"
        result["message"] = "%s: %s" % (type(e).__name__, e) if str(e) else type(e).__name__
    return result


# The registry task() fills and serve() serves when given no handlers.
registry = {}


def task(name=None):
    """Register a function as the handler of a task name (default: the
    function's name); serve() without handlers serves the registry:

        @drover.pool.task("resize")
        def resize(envelope, ctx): ...

        if __name__ == "__main__":
            drover.pool.serve()
    """
    def register(fn):
        registry[name or fn.__name__] = fn
        return fn
    if callable(name):  # @task without parentheses
        fn, name = name, None
        return register(fn)
    return register


def serve(handlers=None, task_fd=TASK_FD, result_fd=RESULT_FD):
    """Serve tasks until the worker closes the task descriptor, then exit 0.

    handlers maps task names to functions f(envelope, ctx) (default: the
    functions registered with @task). Must be called in a process the
    worker started as a pooled child.
    """
    if handlers is None:
        handlers = registry
    version = os.environ.get("DROVER_POOL_PROTOCOL")
    if version != str(PROTOCOL):
        sys.stderr.write(
            "drover_pool: DROVER_POOL_PROTOCOL=%r: not started as a pooled child "
            "(protocol %d) of a Drover worker\n" % (version, PROTOCOL))
        sys.exit(126)
    write_frame(result_fd, {"type": "ready", "protocol": PROTOCOL})
    while True:
        frame = read_frame(task_fd)
        if frame is None:
            sys.stdout.flush()
            sys.stderr.flush()
            sys.exit(0)
        if frame.get("type") != "task":
            raise ProtocolError("want a task frame, have %r" % frame.get("type"))
        result = run_one(handlers, frame)
        # Output written during the task belongs to it: flush before the
        # result, so the worker finds it in the pipe.
        sys.stdout.flush()
        sys.stderr.flush()
        write_frame(result_fd, result)


def main():
    """python3 -m drover.pool: serve a no-op handler for every task."""
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0)
    # Without arguments: serve a no-op handler for every task (a smoke test
    # and the benchmark's pooled program).
    serve({"*": lambda envelope, ctx: None})


if __name__ == "__main__":
    main()
