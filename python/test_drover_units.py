"""Unit tests of the drover package's pure parts (no servers). The fleet
suite is tests/test_fleet.py."""

import datetime
import unittest

import redis

import drover.pool
from drover.client import LAYOUT_VERSION, VERSIONS, _parse_time, _Recent, _rfc3339
from drover.enqueue_plan import GENERAL, MANY, ONE, SPREAD, Message, plan
from drover.http import _job
from drover.ids import new_id
from drover.redis_clock import RedisClock
from drover.types import Job


class UnitTests(unittest.TestCase):
    def test_scripts_and_versions_ship_with_the_package(self):
        self.assertEqual(LAYOUT_VERSION, VERSIONS["enqueue"])
        self.assertIn("record-outcomes", VERSIONS)

    def test_times_round_trip_with_nanoseconds(self):
        t = datetime.datetime(2030, 1, 2, 3, 4, 5, 123456, tzinfo=datetime.timezone.utc)
        self.assertEqual(_rfc3339(t), "2030-01-02T03:04:05.123456Z")
        self.assertEqual(_parse_time("2030-01-02T03:04:05.123456789Z"), int(t.timestamp()) * 1_000_000 + 123456)
        self.assertEqual(_parse_time("not a time"), 0)

    def test_registered_queues_are_forgotten_once_unused(self):
        # A name stays while used once a period and goes one to two periods
        # after its last use; two periods without any call drop everything.
        now = [0.0]
        r = _Recent(60.0, clock=lambda: now[0])
        r.update(["used", "unused"])
        now[0] = 60.0  # turn: both in the previous generation
        self.assertIn("used", r)
        now[0] = 120.0  # turn: unused goes, used was copied forward
        self.assertIn("used", r)
        self.assertNotIn("unused", r)
        self.assertEqual(len(r), 1)
        now[0] = 240.0  # nothing asked for two periods
        self.assertNotIn("used", r)
        self.assertEqual(len(r), 0)

    def test_ids_are_unique(self):
        self.assertEqual(len({new_id() for _ in range(1000)}), 1000)

    def test_http_job_body(self):
        due = datetime.datetime(2030, 1, 2, 9, tzinfo=datetime.timezone.utc)
        self.assertEqual(_job(Job("q", "t", {"a": 1}, id="k", due=due, max_attempts=2, headers={"h": "v"})),
                         {"task": "t", "args": {"a": 1}, "id": "k", "headers": {"h": "v"},
                          "max_attempts": 2, "at": "2030-01-02T09:00:00Z"})
        self.assertEqual(_job(Job("q", "t", delay=1.5))["in"], "1500ms")
        with self.assertRaises(drover.DroverError):
            _job(Job("q", "t", due=datetime.datetime(2030, 1, 2)))  # naive

    def test_task_decorator_registers(self):
        saved = dict(drover.pool.registry)
        try:
            @drover.pool.task("named")
            def f(envelope, ctx):
                return None

            @drover.pool.task
            def bare(envelope, ctx):
                return None

            self.assertIs(drover.pool.registry["named"], f)
            self.assertIs(drover.pool.registry["bare"], bare)
            res = drover.pool.run_one(drover.pool.registry, {"seq": 1, "task": "named", "envelope": {}})
            self.assertEqual(res["outcome"], "success")
        finally:
            drover.pool.registry.clear()
            drover.pool.registry.update(saved)


def messages(spec):
    """Messages from (queue, count, keyed, due_ms) groups, in order."""
    out = []
    for queue, count, keyed, due_ms in spec:
        for _ in range(count):
            out.append(Message(len(out), queue, "id-%d" % len(out), "{}", due_ms, keyed))
    return out


def shape(calls):
    """A plan as (kind, [(queue, messages)...]) per call."""
    out = []
    for kind, ms in calls:
        per = []
        for m in ms:
            if per and per[-1][0] == m.queue:
                per[-1] = (m.queue, per[-1][1] + 1)
            else:
                per.append((m.queue, 1))
        out.append((kind, per))
    return out


class PlanTests(unittest.TestCase):
    """drover.enqueue_plan: the script calls of a batch, as the Go producer
    groups them (queue/enqueue.go, enqueueSpread)."""

    def test_calls(self):
        singles = [("q%d" % i, 1, False, 0) for i in range(300)]
        table = [
            ("a lone message", [("a", 1, False, 0)], [(ONE, [("a", 1)])]),
            ("several to one queue", [("a", 3, False, 0)], [(MANY, [("a", 3)])]),
            ("one each to two queues", [("a", 1, False, 0), ("b", 1, False, 0)],
             [(SPREAD, [("a", 1), ("b", 1)])]),
            ("a queue with several beside queues with one",
             [("a", 1, False, 0), ("b", 1, False, 0), ("a", 1, False, 0), ("c", 1, False, 0)],
             [(SPREAD, [("b", 1), ("c", 1)]), (MANY, [("a", 2)])]),
            ("one queue with one beside another with several",
             [("a", 1, False, 0), ("b", 2, False, 0)], [(ONE, [("a", 1)]), (MANY, [("b", 2)])]),
            ("1001 to one queue", [("a", 1001, False, 0)], [(MANY, [("a", 1000)]), (ONE, [("a", 1)])]),
            ("2002 to one queue", [("a", 2002, False, 0)], [(MANY, [("a", 1000)]), (MANY, [("a", 1000)]),
                                                             (MANY, [("a", 2)])]),
            ("300 queues with one", singles,
             [(SPREAD, [("q%d" % i, 1) for i in range(256)]), (SPREAD, [("q%d" % i, 1) for i in range(256, 300)])]),
            ("257 queues with one", singles[:257],
             [(SPREAD, [("q%d" % i, 1) for i in range(256)]), (ONE, [("q256", 1)])]),
            ("a caller's id sends the whole batch the general way",
             [("a", 2, False, 0), ("b", 1, False, 0), ("a", 1, True, 0)],
             [(GENERAL, [("a", 3)]), (GENERAL, [("b", 1)])]),
            ("so does a due time", [("a", 1, False, 0), ("b", 1, False, 1893456000000)],
             [(GENERAL, [("a", 1)]), (GENERAL, [("b", 1)])]),
            ("general calls hold 1000", [("a", 1001, True, 0)], [(GENERAL, [("a", 1000)]), (GENERAL, [("a", 1)])]),
            ("nothing", [], []),
        ]
        for name, spec, want in table:
            with self.subTest(name):
                ms = messages(spec)
                calls = plan(ms)
                self.assertEqual(shape(calls), want)
                # Every message once, and each queue's in the batch's order.
                sent = [m for _, c in calls for m in c]
                self.assertEqual(sorted(m.index for m in sent), list(range(len(ms))))
                for q in {m.queue for m in ms}:
                    idx = [m.index for m in sent if m.queue == q]
                    self.assertEqual(idx, sorted(idx), f"queue {q} out of order")


class FakeRedis:
    """TIME answers from a list; an exception in it is raised instead."""

    def __init__(self, answers, during=None):
        self.answers, self.during, self.calls = list(answers), during, 0

    def time(self):
        self.calls += 1
        if self.during:
            self.during()
        a = self.answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return a


class RedisClockTests(unittest.TestCase):
    def test_reads_time_on_first_use_then_once_the_reading_is_5s_old(self):
        now = [100.0]
        clock = RedisClock(monotonic=lambda: now[0])
        r = FakeRedis([(1000, 5), (2000, 0)])
        self.assertEqual(clock.now(r), 1000_000_005)
        now[0] += 4.999
        self.assertEqual(clock.now(r), 1000_000_005 + 4_999_000)
        self.assertEqual(r.calls, 1)
        now[0] += 0.001
        self.assertEqual(clock.now(r), 2000_000_000)
        self.assertEqual(r.calls, 2)

    def test_a_failed_read_is_no_estimate_and_is_tried_again(self):
        now = [0.0]
        clock = RedisClock(monotonic=lambda: now[0])
        r = FakeRedis([redis.ConnectionError("down"), (7, 0)])
        self.assertEqual(clock.now(r), 0)
        self.assertEqual(clock.now(r), 7_000_000)
        self.assertEqual(r.calls, 2)

    def test_a_local_clock_before_the_reading_reads_again(self):
        now = [10.0]
        clock = RedisClock(monotonic=lambda: now[0])
        r = FakeRedis([(1, 0), (2, 0)])
        clock.now(r)
        now[0] = 9.0
        self.assertEqual(clock.now(r), 2_000_000)

    def test_while_another_caller_reads_time_the_older_reading_serves(self):
        # The other caller is the one inside TIME's round trip: its
        # non-blocking turn fails as another thread's would.
        now = [0.0]
        clock = RedisClock(monotonic=lambda: now[0])
        seen = []
        r = FakeRedis([(1, 0)], during=lambda: seen.append(clock.now(r)))
        clock.now(r)
        self.assertEqual(seen, [0], "no reading yet: no estimate")
        now[0] = 6.0
        r.answers.append((9, 0))
        seen.clear()
        self.assertEqual(clock.now(r), 9_000_000)
        self.assertEqual(seen, [7_000_000], "the older reading, 6 s on")
        self.assertEqual(r.calls, 2)


if __name__ == "__main__":
    unittest.main()
