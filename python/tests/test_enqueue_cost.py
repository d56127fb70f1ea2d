"""What an enqueue costs Redis, counted in commands, and the order it keeps,
on a Redis server no other client uses while the suite runs (INFO
commandstats counts every client's commands). Run by the Go tests
tools/pyscripts TestPythonEnqueueCostAndOrder and
examples.TestPythonClientAgainstAFleet, each of which starts a private
Redis and sets:

    DROVER_QUIET_REDIS_URL (that server), DROVER_PREFIX.

Standalone: /usr/bin/python3 -m unittest tests.test_enqueue_cost from
python/ (with those variables set)."""

import os
import secrets
import unittest

import redis

import drover
from drover.redis_clock import RedisClock


def env(name):
    v = os.environ.get(name)
    if not v:
        raise RuntimeError(f"{name} not set: run through go test ./tools/pyscripts -run TestPythonEnqueueCost")
    return v


class FakeMonotonic:
    """The client's local clock, moved by the test: its estimate of Redis's
    clock then reads TIME only on first use, whatever the machine's speed."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def commands(r):
    """Calls per command since the server started (INFO commandstats),
    commands run inside scripts included."""
    return {k[len("cmdstat_"):]: v["calls"] for k, v in r.info("commandstats").items()}


def spent(before, after):
    """The commands run between two commands() readings, without the
    readings' own INFO."""
    d = {k: n - before.get(k, 0) for k, n in after.items() if k != "info"}
    return {k: n for k, n in d.items() if n}


class Base(unittest.TestCase):
    def setUp(self):
        self.r = redis.Redis.from_url(env("DROVER_QUIET_REDIS_URL"))
        self.prefix = env("DROVER_PREFIX") + "-cost-" + secrets.token_hex(4)
        self.clock = FakeMonotonic()
        self.c = self.client()

    def client(self, **kw):
        c = drover.Client(self.r, prefix=self.prefix, **kw)
        c._redis_now = RedisClock(monotonic=self.clock)
        return c

    def tearDown(self):
        for k in self.r.scan_iter(match=self.prefix + "*"):
            self.r.delete(k)

    def warm_up(self, c, jobs):
        """Enqueues jobs (registering their queues, loading the scripts,
        reading TIME), then moves the local clock a second on: the
        estimates that follow lie past every position the warm-up wrote
        (its new queues' first positions come from the script's own TIME
        read), so each following position is the estimate, with no second
        SET and no TIME."""
        c.enqueue_many(jobs)
        self.clock.t += 1.0


class CostTests(Base):
    """Today's figures; the general script (before the lone scripts) ran
    per message an EVALSHA and six commands inside: TIME, MGET, HSETNX,
    ZADD, SET, PUBLISH."""

    def test_a_lone_enqueue_is_one_call_of_five_commands(self):
        q = "lone"
        self.warm_up(self.c, [drover.Job(q, "t")])
        n = 50
        before = commands(self.r)
        for _ in range(n):
            _, pos = self.c.enqueue(q, "t", {"n": 1})
            self.assertGreater(pos, 0)
            self.clock.t += 0.001
        have = spent(before, commands(self.r))
        # HSETNX, SET :seq <estimate> GET, ZADD, GET :owner, PUBLISH: no
        # TIME, no MGET.
        want = {"evalsha": n, "hsetnx": n, "set": n, "zadd": n, "get": n, "publish": n}
        self.assertEqual(have, want, f"{n} lone enqueues: want {want}, have {have}")
        self.assertEqual(sum(have.values()) / n, 6)

    def test_a_lone_enqueue_without_wakeups_is_one_call_of_three_commands(self):
        c = self.client(wakeups=False)
        q = "quiet"
        self.warm_up(c, [drover.Job(q, "t")])
        n = 20
        before = commands(self.r)
        for _ in range(n):
            c.enqueue(q, "t")
            self.clock.t += 0.001
        have = spent(before, commands(self.r))
        want = {"evalsha": n, "hsetnx": n, "set": n, "zadd": n}
        self.assertEqual(have, want, f"{n} lone enqueues without wake-ups: want {want}, have {have}")

    def test_the_clock_is_read_on_first_use_then_every_five_seconds(self):
        q = "clock"
        before = commands(self.r)
        self.c.enqueue(q, "t")  # the first use; a new queue: the script reads TIME too
        self.clock.t += 1.0
        for _ in range(3):
            self.c.enqueue(q, "t")
            self.clock.t += 1.0
        self.assertEqual(spent(before, commands(self.r)).get("time"), 2, "4 enqueues in 4 s")
        self.clock.t += 1.5  # 5.5 s after the reading: read again, once
        before = commands(self.r)
        for _ in range(3):
            self.c.enqueue(q, "t")
        self.assertEqual(spent(before, commands(self.r)).get("time"), 1, "3 enqueues 5.5 s later")

    def test_a_batch_over_200_queues_is_one_call_and_a_publish_per_owner(self):
        queues = [f"key-{i}" for i in range(200)]
        self.warm_up(self.c, [drover.Job(q, "t") for q in queues])
        owners = [f"{self.prefix}:wake-b:member-{i}" for i in range(4)]  # members' batch channels
        for i, q in enumerate(queues):
            self.r.set(self.c._keys(q)["owner"], owners[i % len(owners)])
        jobs = [drover.Job(q, "t", {"i": i}) for i, q in enumerate(queues)]
        before = commands(self.r)
        res = self.c.enqueue_many(jobs)
        have = spent(before, commands(self.r))
        self.assertTrue(all(pos > 0 for _, pos in res))
        # One enqueue-spread call: per queue HSETNX, SET … GET, ZADD and
        # GET :owner; one PUBLISH per owner's channel.
        want = {"evalsha": 1, "hsetnx": 200, "set": 200, "zadd": 200, "get": 200, "publish": len(owners)}
        self.assertEqual(have, want, f"200 messages to 200 queues: want {want}, have {have}")
        self.assertLessEqual(sum(have.values()), 4 * 200 + 1 + len(owners))

    def test_an_unconfirmed_durable_lone_enqueue_is_outcome_unknown_and_written(self):
        # This server has no replica: never confirmed, but written.
        c = self.client(durable=drover.Durable(replicas=1, timeout=0.05))
        q = "durable"
        with self.assertRaises(drover.OutcomeUnknown) as cm:
            c.enqueue(q, "t")
        (job_id,) = cm.exception.ids
        self.assertTrue(self.r.hexists(c._keys(q)["msg"], job_id))
        self.assertIsNotNone(self.r.zscore(c._keys(q)["log"], job_id))


class OrderTests(Base):
    def test_positions_increase_per_queue_across_mixed_calls(self):
        a, b, c3 = "mix-a", "mix-b", "mix-c"
        J = drover.Job
        calls = [
            [J(a, "t")],  # enqueue-one, a new queue (pipeline with SADD)
            [J(a, "t"), J(b, "t"), J(c3, "t")],  # enqueue-spread
            [J(a, "t"), J(b, "t"), J(a, "t"), J(a, "t")],  # enqueue-many (a), enqueue-one (b)
            [J(a, "t"), J(b, "t"), J(c3, "t", id="key-1"), J(a, "t")],  # general: a caller's id
            [J(b, "t")],  # enqueue-one, no pipeline
            [J(a, "t", id="key-1"), J(c3, "t", id="key-1"), J(b, "t")],  # general: key-1 known in c only
            [J(a, "t") for _ in range(1001)] + [J(b, "t")],  # enqueue-many of 1000, then of 1 after it
            [J(f"mix-s{i}", "t") for i in range(300)] + [J(c3, "t"), J(c3, "t")],  # 2 spread calls, many
            [J(a, "t", delay=3600), J(a, "t")],  # general: the delayed one is 0
        ]
        sent = []  # (job, id, result) in the order sent
        for jobs in calls:
            if len(jobs) == 1:
                j = jobs[0]
                res = [self.c.enqueue(j.queue, j.task, id=j.id, delay=j.delay)]
            else:
                res = self.c.enqueue_many(jobs)
            self.assertEqual(len(res), len(jobs))
            for j, (job_id, result) in zip(jobs, res):
                if j.id is not None:
                    self.assertEqual(job_id, j.id)
                sent.append((j, job_id, result))
        dups = [(j.queue, job_id) for j, job_id, result in sent if result == -1]
        self.assertEqual(dups, [(c3, "key-1")], "want only the second key-1 in mix-c refused")
        ids = [(j.queue, job_id) for j, job_id, result in sent if result != -1]
        self.assertEqual(len(ids), len(set(ids)), "an id came back twice in a queue")
        last = {}
        for j, job_id, result in sent:
            if result <= 0:
                continue
            # Each result is its own job's position (results in the jobs'
            # order) and each queue's positions strictly increase.
            self.assertEqual(self.r.zscore(self.c._keys(j.queue)["log"], job_id), result, job_id)
            self.assertGreater(result, last.get(j.queue, 0), f"{j.queue}: {job_id} went back")
            last[j.queue] = result
        for q in (a, b, c3):
            want = [job_id for j, job_id, result in sent if j.queue == q and result > 0]
            have = [m.decode() for m in self.r.zrange(self.c._keys(q)["log"], 0, -1)]
            self.assertEqual(have, want, f"{q}: the log's order")
        delayed = [result for j, _, result in sent if j.delay]
        self.assertEqual(delayed, [0])


if __name__ == "__main__":
    unittest.main()
