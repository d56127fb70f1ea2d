#!/usr/bin/env python3
"""http-producer.py — enqueue Drover jobs and ask where they are over the
console's HTTP API (docs/http-api.md), with nothing but Python's standard
HTTP library (urllib): no Redis client, no Drover library.

    examples/http-producer.py enqueue QUEUE TASK ['{"json": "args"}'] [--id KEY] [--in 10m | --at RFC3339]
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
import sys
import urllib.error
import urllib.parse
import urllib.request


def call(method, path, body=None):
    """Send one request to the API and return the decoded JSON answer."""
    url = os.environ.get("DROVER_URL", "http://127.0.0.1:8080").rstrip("/") + "/api/v1" + path
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    token = os.environ.get("DROVER_TOKEN")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as e:
        try:
            msg = json.load(e).get("error", "")
        except ValueError:
            msg = ""
        sys.exit(f"{method} {path}: {e.code} {e.reason}: {msg}")


def q(s):
    return urllib.parse.quote(s, safe="")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("enqueue")
    e.add_argument("queue")
    e.add_argument("task")
    e.add_argument("args", nargs="?", default=None)
    e.add_argument("--id")
    e.add_argument("--in", dest="delay")
    e.add_argument("--at")
    b = sub.add_parser("batch")
    b.add_argument("queue")
    b.add_argument("task")
    b.add_argument("n", type=int)
    for name in ("status", "revoke"):
        s = sub.add_parser(name)
        s.add_argument("queue")
        s.add_argument("id")
    a = p.parse_args()

    if a.cmd == "enqueue":
        job = {"task": a.task}
        if a.args is not None:
            job["args"] = json.loads(a.args)
        if a.id:
            job["id"] = a.id
        if a.delay:
            job["in"] = a.delay
        if a.at:
            job["at"] = a.at
        out = call("POST", f"/queues/{q(a.queue)}/jobs", job)
    elif a.cmd == "batch":
        jobs = [{"task": a.task, "args": {"i": i}} for i in range(a.n)]
        out = call("POST", f"/queues/{q(a.queue)}/jobs", {"jobs": jobs})
    elif a.cmd == "status":
        out = call("GET", f"/queues/{q(a.queue)}/jobs/{q(a.id)}")
    else:
        out = call("DELETE", f"/queues/{q(a.queue)}/jobs/{q(a.id)}")
    json.dump(out, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
