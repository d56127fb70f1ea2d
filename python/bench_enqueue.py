"""Python enqueue throughput from one thread (tools/benchreport,
"Python client"): prints msgs/s for one mode.

    bench_enqueue.py REDIS_URL PREFIX MODE N

MODE: single (Client.enqueue, one message per call), batch100
(Client.enqueue_many, 100 per call), lpush (a bare redis-py LPUSH loop of
the same envelope: the floor any Redis-backed Python producer pays)."""

import json
import sys
import time

import redis

import drover


def main():
    url, prefix, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    r = redis.Redis.from_url(url)
    c = drover.Client(r, prefix=prefix)
    q = "bench-" + mode
    c.enqueue(q, "warm-up")  # loads the script
    args = {"user": 42, "text": "hello"}
    start = time.perf_counter()
    if mode == "single":
        for _ in range(n):
            c.enqueue(q, "send", args)
    elif mode == "batch100":
        for _ in range(n // 100):
            c.enqueue_many([drover.Job(q, "send", args) for _ in range(100)])
    elif mode == "lpush":
        key = prefix + ":bench-lpush"
        for i in range(n):
            r.lpush(key, json.dumps({"id": drover.new_id(), "queue": q, "task": "send", "args": args}))
    else:
        sys.exit("unknown mode " + mode)
    elapsed = time.perf_counter() - start
    print(f"{n / elapsed:.1f}")


if __name__ == "__main__":
    main()
