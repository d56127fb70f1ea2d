#!/usr/bin/env python3
"""http-producer.py — enqueue Drover jobs and ask where they are over the
console's HTTP API (docs/http-api.md) with drover.HTTPClient (standard
library only: no Redis client). See docs/python.md.

    examples/http-producer.py enqueue QUEUE TASK ['{"json": "args"}'] [--id KEY] [--in DELAY]
    examples/http-producer.py batch QUEUE TASK N           # N jobs in one request
    examples/http-producer.py status QUEUE ID
    examples/http-producer.py revoke QUEUE ID

Environment: DROVER_URL (http://127.0.0.1:8080), DROVER_TOKEN (a producer
token: drover web token NAME producer). Prints the API's JSON answer; exits
1 on an HTTP error, printing the status and the API's error message.
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
from drover.http import HTTPError


UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def delay(text: str) -> float:
    """Seconds, from "90" or a number with one unit ("500ms", "1h")."""
    for unit in sorted(UNITS, key=len, reverse=True):
        if text.endswith(unit):
            try:
                return float(text[: -len(unit)]) * UNITS[unit]
            except ValueError:
                break
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: want seconds or a duration such as 30s, 15m or 1h") from None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("enqueue")
    e.add_argument("queue")
    e.add_argument("task")
    e.add_argument("args", nargs="?", default=None)
    e.add_argument("--id")
    e.add_argument("--in", dest="delay", type=delay, default=0,
                   help="run after this delay: seconds (90) or a duration with a unit (500ms, 30s, 15m, 1h, 2d)")
    b = sub.add_parser("batch")
    b.add_argument("queue")
    b.add_argument("task")
    b.add_argument("n", type=int)
    for name in ("status", "revoke"):
        s = sub.add_parser(name)
        s.add_argument("queue")
        s.add_argument("id")
    a = p.parse_args()
    c = drover.HTTPClient(os.environ.get("DROVER_URL", "http://127.0.0.1:8080"), os.environ.get("DROVER_TOKEN", ""))
    try:
        if a.cmd == "enqueue":
            args = None if a.args is None else json.loads(a.args)
            out = c.enqueue(a.queue, a.task, args, id=a.id, delay=a.delay)
        elif a.cmd == "batch":
            out = c.enqueue_many(a.queue, [drover.Job(a.queue, a.task, {"i": i}) for i in range(a.n)])
        elif a.cmd == "status":
            out = c.status(a.queue, a.id)
        else:
            out = c.revoke(a.queue, a.id)
    except HTTPError as err:
        sys.exit(f"{a.cmd}: {err}")
    json.dump(out, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
