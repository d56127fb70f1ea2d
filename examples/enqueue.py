#!/usr/bin/env python3
"""enqueue.py — enqueue Drover tasks from Python with redis-py (Debian:
apt-get install python3-redis), using the documented enqueue script
(docs/redis-schema.md, "Enqueueing").

    examples/enqueue.py QUEUE TASK '{"args": "json"}' [--id KEY] [--in SECONDS]

Environment: REDIS_URL (redis://127.0.0.1:6379/0), DROVER_PREFIX (drover),
DROVER_SCHEMA (the path of docs/redis-schema.md).
"""
import argparse
import datetime
import json
import os
import pathlib
import re
import secrets
import time

import redis

DEDUPE_WINDOW_MS = 24 * 3600 * 1000


def load_script(schema_path: pathlib.Path) -> str:
    text = schema_path.read_text()
    m = re.search(r"^(-- drover enqueue v1.*?)^```", text, re.S | re.M)
    if not m:
        raise SystemExit(f"no enqueue script found in {schema_path}")
    return m.group(1)


def enqueue(r, script, prefix, queue, task, args, msg_id=None, delay=0.0):
    """Enqueue one message; returns (id, position). position is 0 when the
    message was delayed and -1 when the id was already known."""
    keyed = msg_id is not None
    msg_id = msg_id or f"py-{time.time_ns()}-{secrets.token_hex(4)}"
    envelope = {
        "id": msg_id,
        "queue": queue,
        "task": task,
        "args": args,
        "attempt": 0,
        "enqueued_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    }
    due = int((time.time() + delay) * 1000) if delay > 0 else 0
    k = f"{prefix}:{{{queue}}}"
    keys = [f"{k}:log", f"{k}:msg", f"{k}:seq", f"{k}:delayed", f"{k}:seen"]
    argv = [DEDUPE_WINDOW_MS, f"{prefix}:wakeup", queue, msg_id, json.dumps(envelope), due, 1 if keyed else 0]
    (position,) = script(keys=keys, args=argv)
    r.sadd(f"{prefix}:queues", queue)  # discovery; a separate key, a separate call
    return msg_id, position


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("queue")
    p.add_argument("task")
    p.add_argument("args", nargs="?", default="null", help="the task's arguments, JSON")
    p.add_argument("--id", help="idempotency key")
    p.add_argument("--in", dest="delay", type=float, default=0, help="run after this many seconds")
    o = p.parse_args()
    here = pathlib.Path(__file__).resolve().parent
    schema = pathlib.Path(os.environ.get("DROVER_SCHEMA", here.parent / "docs" / "redis-schema.md"))
    r = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    script = r.register_script(load_script(schema))
    msg_id, position = enqueue(r, script, os.environ.get("DROVER_PREFIX", "drover"), o.queue, o.task, json.loads(o.args), o.id, o.delay)
    print(msg_id, position)


if __name__ == "__main__":
    main()
