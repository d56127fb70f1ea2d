#!/usr/bin/env python3
"""enqueue.py — enqueue a Drover task from Python with the drover package
(pip install ./python, or PYTHONPATH=python; needs redis-py: Debian's
python3-redis with /usr/bin/python3). See docs/python.md.

    examples/enqueue.py QUEUE TASK ['{"args": "json"}'] [--id KEY] [--in SECONDS]

Environment: REDIS_URL (redis://127.0.0.1:6379/0), DROVER_PREFIX (drover).
Prints the message id and its position (> 0), 0 when delayed, -1 when the
id was already known.
"""
import argparse
import json
import os
import pathlib
import sys

try:
    import drover
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python"))
    import drover


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("queue")
    p.add_argument("task")
    p.add_argument("args", nargs="?", default="null", help="the task's arguments, JSON")
    p.add_argument("--id", help="idempotency key")
    p.add_argument("--in", dest="delay", type=float, default=0, help="run after this many seconds")
    o = p.parse_args()
    c = drover.Client.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
                               prefix=os.environ.get("DROVER_PREFIX", "drover"))
    msg_id, position = c.enqueue(o.queue, o.task, json.loads(o.args), id=o.id, delay=o.delay)
    print(msg_id, position)


if __name__ == "__main__":
    main()
