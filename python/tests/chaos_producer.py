"""The chaos harness's Python producer (tools/chaos/foreign.go): it enqueues
the batches the harness writes on stdin, one JSON line each, through this
client's enqueue_many, and answers each on stdout with one line: the result
per message, or the error. The harness sends a batch again after an error
(the same ids), so a message is confirmed only when Redis was.

    in:  {"msgs": [{"queue": "q02", "task": "work", "args": {...}, "id": "m-0000007"}, ...]}
         (no "id": the client generates one)
    out: {"results": [{"id": "m-0000007", "result": 1733150000000123}, ...]}
         or {"error": "..."}

Redis: CHAOS_REDIS_URL, or CHAOS_SENTINELS ("host:port,host:port") with
CHAOS_SENTINEL_MASTER; CHAOS_PREFIX the fleet's prefix; CHAOS_DURABLE
"<replicas>:<timeout ms>" turns the durable mode on. Run with PYTHONPATH at
python/ and Debian's python3-redis."""
import json
import os
import sys

import redis
import redis.sentinel

import drover


def connect() -> "redis.Redis":
    sentinels = os.environ.get("CHAOS_SENTINELS")
    if sentinels:
        addrs = []
        for a in sentinels.split(","):
            host, _, port = a.rpartition(":")
            addrs.append((host, int(port)))
        s = redis.sentinel.Sentinel(addrs, socket_timeout=5)
        return s.master_for(os.environ["CHAOS_SENTINEL_MASTER"], socket_timeout=5)
    return redis.Redis.from_url(os.environ["CHAOS_REDIS_URL"], socket_timeout=5)


def durable():
    d = os.environ.get("CHAOS_DURABLE")
    if not d:
        return None
    replicas, timeout_ms = d.split(":")
    return drover.Durable(replicas=int(replicas), timeout=int(timeout_ms) / 1000)


def main() -> None:
    # No layout check at start: Redis may be restarting when the harness
    # starts this producer again; the harness's own store checks it.
    client = drover.Client(connect(), prefix=os.environ.get("CHAOS_PREFIX", "drover"),
                           check_layout=False, durable=durable())
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msgs = json.loads(line)["msgs"]
            jobs = [drover.Job(m["queue"], m["task"], m.get("args"), m.get("id")) for m in msgs]
            res = client.enqueue_many(jobs)
            out = {"results": [{"id": i, "result": r} for i, r in res]}
        except Exception as e:  # every failure is answered: the harness sends the batch again
            out = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
