#!/usr/bin/env python3
"""hello.py — an example Drover task in Python (standard library only).

The envelope arrives as one JSON object on stdin:
  {"id": "...", "queue": "...", "task": "...", "args": {...}, "attempt": 0,
   "enqueued_at": "...", ...}
Exit 0 for success, 75 (EX_TEMPFAIL) to be retried later, anything else
for a failure.
"""
import json
import os
import sys
import time

EX_TEMPFAIL = 75


def main() -> int:
    envelope = json.load(sys.stdin)
    args = envelope.get("args") or {}
    if args.get("sleep"):
        time.sleep(float(args["sleep"]))
    if args.get("flaky") and envelope.get("attempt", 0) == 0:
        print("flaky: asking for a retry", file=sys.stderr)
        return EX_TEMPFAIL
    if args.get("fail"):
        print("asked to fail (args.fail is true)", file=sys.stderr)
        return 1
    print(
        f"python task {envelope['task']} of {os.environ.get('DROVER_QUEUE')} "
        f"id={envelope['id']} attempt={envelope.get('attempt', 0)} args={json.dumps(args)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
