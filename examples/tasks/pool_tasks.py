"""Pooled Python tasks for the example queue in examples/pool-queue.json.

The worker starts this program once per warm child and sends it tasks over
fds 3 and 4 (docs/process-pool.md); imports and set-up below run once per
child, not once per task.
"""
import hashlib
import sys

import drover.pool as drover_pool  # python/drover: installed (pip install ./python) or on PYTHONPATH through the route's env

SEEN = 0  # lives as long as the child: recycling bounds what it may grow to


def checksum(envelope, ctx):
    global SEEN
    SEEN += 1
    text = str(envelope.get("args", {}).get("text", ""))
    print("sha256(%r) = %s (task %d in this child, attempt %d)"
          % (text, hashlib.sha256(text.encode()).hexdigest(), SEEN, ctx.attempt))


def flaky(envelope, ctx):
    if ctx.attempt == 0:
        raise drover_pool.Retry("first attempts always fail here")
    print("succeeded on attempt", ctx.attempt)


if __name__ == "__main__":
    print("pooled child ready", file=sys.stderr)
    drover_pool.serve({"checksum": checksum, "flaky": flaky})
