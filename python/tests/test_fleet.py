"""The Python client against a real fleet. Run by the Go test
examples.TestPythonClientAgainstAFleet, which starts Redis, ZooKeeper,
`drover worker`, `drover scheduler` and `drover web` and sets:

    REDIS_URL, DROVER_PREFIX, DROVER_QUEUE (its tasks run fleet_tasks.py in
    a pool), DONE_FILE (the ids that ran), DROVER_URL, DROVER_TOKEN (a
    producer token), and DROVER_QUIET_REDIS_URL (a private Redis for
    test_enqueue_cost.py, which counts commands).

Standalone: /usr/bin/python3 -m unittest discover -s python/tests (with
those variables set)."""

import os
import time
import unittest

import json
import redis

import drover
from drover.client import LAYOUT_VERSION
from drover.http import HTTPError

GUARD = 90.0  # seconds: only keeps a broken fleet from hanging the suite


def env(name):
    v = os.environ.get(name)
    if not v:
        raise RuntimeError(f"{name} not set: run through go test ./examples -run TestPythonClient")
    return v


def wait_for(what, cond):
    deadline = time.monotonic() + GUARD
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def ran():
    try:
        with open(env("DONE_FILE")) as f:
            return f.read().split()
    except FileNotFoundError:
        return []


class RedisClientTests(unittest.TestCase):
    def setUp(self):
        self.r = redis.Redis.from_url(env("REDIS_URL"))
        self.c = drover.Client(self.r, prefix=env("DROVER_PREFIX"))
        self.q = env("DROVER_QUEUE")

    def test_enqueue_runs_and_succeeds(self):
        job_id, pos = self.c.enqueue(self.q, "record", {"n": 1}, headers={"from": "python"})
        self.assertGreater(pos, 0)
        st = wait_for("status succeeded", lambda: (lambda s: s if s.state == "succeeded" else None)(
            self.c.status(self.q, job_id)))
        self.assertEqual(st.task, "record")
        self.assertIn(job_id, ran())

    def test_enqueue_many_runs_each_once(self):
        jobs = [drover.Job(self.q, "record", {"i": i}) for i in range(150)]
        res = self.c.enqueue_many(jobs)
        ids = [i for i, _ in res]
        self.assertEqual(len(set(ids)), 150)
        self.assertTrue(all(p > 0 for _, p in res))
        wait_for("150 runs", lambda: set(ids) <= set(ran()))
        done = ran()
        self.assertEqual([i for i in ids if done.count(i) != 1], [])

    def test_idempotency_key(self):
        key = "py-key-%d" % time.time_ns()
        _, first = self.c.enqueue(self.q, "record", id=key, delay=3600)
        _, again = self.c.enqueue(self.q, "record", id=key, delay=3600)
        self.assertEqual((first, again), (0, -1))
        self.assertTrue(self.c.revoke(self.q, key))

    def test_delayed_then_revoked(self):
        job_id, pos = self.c.enqueue(self.q, "record", delay=3600)
        self.assertEqual(pos, 0)
        st = self.c.status(self.q, job_id)
        self.assertEqual(st.state, "delayed")
        self.assertIsNotNone(st.due_at)
        # A retry waiting in the delayed set has its starts recorded beside
        # its envelope in :msg (field <id>\0a), or in the previous layout's
        # attempts hash; a revoke forgets them with the message, so a later
        # enqueue of the same id starts from attempt 0.
        k = self.c._keys(self.q)
        starts = job_id + "\x00a"
        self.r.hset(k["msg"], starts, 2)
        self.r.hset(k["attempts"], job_id, 2)
        self.assertTrue(self.c.revoke(self.q, job_id, by="python-suite"))
        self.assertFalse(self.r.hexists(k["msg"], starts))
        self.assertFalse(self.r.hexists(k["attempts"], job_id))
        self.assertFalse(self.c.revoke(self.q, job_id))
        st = self.c.status(self.q, job_id)
        self.assertEqual((st.state, st.by), ("revoked", "python-suite"))
        other, _ = self.c.enqueue(self.q, "record", delay=3600)
        self.assertTrue(self.c.revoke(self.q, other))
        self.assertIn("@", self.c.status(self.q, other).by)  # user@host, as ctl records it

    def test_dead_status_names_the_task(self):
        # A dead letter is the envelope with the failure beside it
        # (docs/redis-schema.md): its status names the task and attempt.
        k = self.c._keys(self.q)
        job_id = "py-dead-%d" % time.time_ns()
        rec = {"id": job_id, "queue": self.q, "task": "record", "attempt": 2,
               "error": "exit status 1", "exit_code": 1, "failed_at": "2026-11-29T08:00:00Z"}
        self.r.zadd(k["dead"], {job_id: int(time.time() * 1000)})
        self.r.hset(k["deadmsg"], job_id, json.dumps(rec))
        st = self.c.status(self.q, job_id)
        self.assertEqual((st.state, st.task, st.attempt, st.exit_code), ("dead", "record", 2, 1))
        self.r.zrem(k["dead"], job_id)
        self.r.hdel(k["deadmsg"], job_id)

    def test_schedule_fires_each_slot_once(self):
        name = "py-every-%d" % time.time_ns()
        self.c.schedule_add(name, {"queue": self.q, "task": "record",
                                   "schedule": {"type": "interval", "every": "1s"}})
        self.assertIn(name, [s.name for s in self.c.schedules()])
        prefix = f"sched:{name}:"
        wait_for("3 fires", lambda: len([i for i in ran() if i.startswith(prefix)]) >= 3)
        self.c.schedule_disable(name)
        self.assertIs(self.c.schedule_get(name).definition["enabled"], False)
        self.c.schedule_enable(name)
        self.assertNotIn("enabled", self.c.schedule_get(name).definition)
        self.assertTrue(self.c.schedule_remove(name))
        self.assertIsNone(self.c.schedule_get(name))
        fires = [i for i in ran() if i.startswith(prefix)]
        slots = [int(i[len(prefix):]) for i in fires]
        self.assertEqual(len(slots), len(set(slots)), f"a slot ran twice: {fires}")

    def test_the_fleet_marks_the_layout_this_client_speaks(self):
        self.assertEqual(int(self.r.get(env("DROVER_PREFIX") + ":layout")), LAYOUT_VERSION)

    def test_refuses_another_layout(self):
        other = env("DROVER_PREFIX") + "-layout"
        self.r.set(other + ":layout", LAYOUT_VERSION + 1)
        try:
            with self.assertRaises(drover.LayoutError) as e:
                drover.Client(self.r, prefix=other)
            self.assertIn("upgrade the client", str(e.exception))
            self.r.set(other + ":layout", LAYOUT_VERSION)
            drover.Client(self.r, prefix=other)
        finally:
            self.r.delete(other + ":layout")


class DurableTests(unittest.TestCase):
    """The durable mode on the fleet's Redis, which has no replica: an
    enqueue needing one replica is never confirmed."""

    def setUp(self):
        self.r = redis.Redis.from_url(env("REDIS_URL"))
        self.prefix = env("DROVER_PREFIX")
        self.q = env("DROVER_QUEUE") + "-durable"  # no task runs it

    def test_unconfirmed_enqueue_is_outcome_unknown_and_safe_to_retry(self):
        c = drover.Client(self.r, prefix=self.prefix, durable=drover.Durable(replicas=1, timeout=0.05))
        with self.assertRaises(drover.OutcomeUnknown) as cm:
            c.enqueue(self.q, "record", {"n": 1}, id="py-durable-1")
        self.assertEqual(cm.exception.ids, ["py-durable-1"])
        with self.assertRaises(drover.OutcomeUnknown) as cm:
            c.enqueue_many([drover.Job(self.q, "record", id="py-durable-2"), drover.Job(self.q, "record")])
        self.assertEqual(len(cm.exception.ids), 2)
        self.assertEqual(cm.exception.ids[0], "py-durable-2")
        # The write reached the master: the retry is a duplicate, not a copy.
        plain = drover.Client(self.r, prefix=self.prefix)
        self.assertEqual(plain.enqueue(self.q, "record", id="py-durable-1"), ("py-durable-1", -1))
        self.assertEqual(self.r.hexists(f"{self.prefix}:{{{self.q}}}:msg", cm.exception.ids[1]), True)

    def test_aof_needs_waitaof(self):
        if tuple(int(p) for p in self.r.info("server")["redis_version"].split(".")[:2]) >= (7, 2):
            self.skipTest("this Redis has WAITAOF (7.2+)")
        c = drover.Client(self.r, prefix=self.prefix, durable=drover.Durable(replicas=1, timeout=0.05, aof=True))
        with self.assertRaises(drover.DroverError) as cm:
            c.enqueue(self.q, "record", id="py-durable-aof")
        self.assertIn("WAITAOF", str(cm.exception))
        self.assertFalse(self.r.hexists(f"{self.prefix}:{{{self.q}}}:msg", "py-durable-aof"))

    def test_durable_is_checked(self):
        with self.assertRaises(ValueError):
            drover.Durable(replicas=0)
        with self.assertRaises(ValueError):
            drover.Durable(timeout=0)


class HTTPProducerTests(unittest.TestCase):
    def setUp(self):
        self.c = drover.HTTPClient(env("DROVER_URL"), env("DROVER_TOKEN"))
        self.q = env("DROVER_QUEUE")

    def test_enqueue_runs_and_succeeds(self):
        out = self.c.enqueue(self.q, "record", {"via": "http"})
        job_id = out["id"]
        wait_for("status succeeded", lambda: self.c.status(self.q, job_id)["state"] == "succeeded")
        self.assertIn(job_id, ran())

    def test_delayed_then_revoked(self):
        out = self.c.enqueue(self.q, "record", delay=3600)
        self.assertTrue(out.get("delayed"))
        self.c.revoke(self.q, out["id"])
        self.assertEqual(self.c.status(self.q, out["id"])["state"], "revoked")

    def test_bad_token_is_refused(self):
        bad = drover.HTTPClient(env("DROVER_URL"), "not-a-token")
        with self.assertRaises(HTTPError) as e:
            bad.enqueue(self.q, "record")
        self.assertEqual(e.exception.status, 401)


if __name__ == "__main__":
    unittest.main()
