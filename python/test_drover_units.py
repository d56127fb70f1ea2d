"""Unit tests of the drover package's pure parts (no servers). The fleet
suite is tests/test_fleet.py."""

import datetime
import unittest

import drover.pool
from drover.client import LAYOUT_VERSION, VERSIONS, _parse_time, _Recent, _rfc3339
from drover.http import _job
from drover.ids import new_id
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


if __name__ == "__main__":
    unittest.main()
