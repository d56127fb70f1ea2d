"""The client refuses what the Go producers refuse, names the field, and
writes nothing. Run by the Go test tools/pyscripts
TestPythonRefusesWhatGoRefuses (a real Redis; REDIS_URL set) and by
examples.TestPythonClientAgainstAFleet.

The shared table, validation_cases.json, is checked against the Go
producer by tools/pyscripts TestCorpusMatchesGoProducer."""

import datetime
import json
import math
import os
import secrets
import unittest

import redis

import drover
from drover.errors import InvalidArgument
from drover.http import _job
from drover.types import Job
from drover.validate import RULES, check_job, encode_json

HERE = os.path.dirname(os.path.abspath(__file__))
DUE = datetime.datetime(2030, 1, 2, 9, tzinfo=datetime.timezone.utc)


def load_cases():
    with open(os.path.join(HERE, "validation_cases.json"), encoding="utf-8") as f:
        return json.load(f)["cases"]


def case_value(c):
    if "repeat" in c:
        s, n = c["repeat"]
        return s * n
    if "raw" in c:
        return json.loads(c["raw"])  # lenient: NaN becomes a float, as a caller's would be
    return c["value"]


def python_accepts(c):
    """The client's verdict on one table case: the other fields valid."""
    kw = {"queue": "corpus", "task": "t"}
    v = case_value(c)
    try:
        if c["field"] == "args":
            encode_json("args", v)
        else:
            kw[c["field"]] = v
        check_job(**kw)
        return True
    except InvalidArgument as e:
        if e.field.split("[")[0] != c["field"]:
            raise AssertionError(f"{c}: refused naming {e.field!r}, want {c['field']!r}")
        return False


class TableTests(unittest.TestCase):
    def test_the_shared_table(self):
        cases = load_cases()
        self.assertGreater(len(cases), 50)
        for c in cases:
            want = c.get("python_valid", c["valid"])
            with self.subTest(case=c):
                self.assertEqual(python_accepts(c), want, c.get("python_why") or c.get("why", ""))

    def test_rules_come_from_go(self):
        self.assertEqual(RULES["queue"]["max_bytes"], 200)
        self.assertEqual(RULES["id"]["max_bytes"], 512)
        self.assertIn([0, 32], RULES["queue"]["forbidden"])


# Each bad input of issue 40 (and its neighbours): the call's keyword
# arguments over a valid message, and the field the refusal must name.
BAD = [
    ({"queue": "cust-a b"}, "queue"),
    ({"queue": "cust/a"}, "queue"),
    ({"queue": "cust-a\n"}, "queue"),
    ({"queue": "c" * 305}, "queue"),
    ({"queue": ""}, "queue"),
    ({"queue": ".."}, "queue"),
    ({"queue": "cust-\ud800"}, "queue"),
    ({"queue": 42}, "queue"),
    ({"task": 7}, "task"),
    ({"task": ""}, "task"),
    ({"task": None}, "task"),
    ({"id": 12345}, "id"),
    ({"id": "x" * 513}, "id"),
    ({"id": "é" * 257}, "id"),
    ({"id": ""}, "id"),
    ({"args": {"v": float("nan")}}, "args"),
    ({"args": [float("inf")]}, "args"),
    ({"args": -math.inf}, "args"),
    ({"args": {"when": DUE}}, "args"),
    ({"args": {1, 2}}, "args"),
    ({"max_attempts": -1}, "max_attempts"),
    ({"max_attempts": 1.5}, "max_attempts"),
    ({"max_attempts": True}, "max_attempts"),
    ({"max_attempts": 2 ** 63}, "max_attempts"),
    ({"headers": {"tenant": 5}}, "headers['tenant']"),
    ({"headers": {5: "x"}}, "headers"),
    ({"headers": [("a", "b")]}, "headers"),
    ({"delay": 5, "due": DUE}, "due"),
    ({"delay": -1}, "delay"),
    ({"delay": float("nan")}, "delay"),
    ({"delay": float("inf")}, "delay"),
    ({"delay": 1e12}, "delay"),
    ({"delay": "10s"}, "delay"),
    ({"due": datetime.datetime(2030, 1, 2)}, "due"),
    ({"due": 1893456000}, "due"),
]


def env(name):
    v = os.environ.get(name)
    if not v:
        raise RuntimeError(f"{name} not set: run through go test ./tools/pyscripts -run TestPythonRefuses")
    return v


class RefusalTests(unittest.TestCase):
    """On a real Redis, under a prefix of its own: a refusal leaves no key."""

    def setUp(self):
        self.r = redis.Redis.from_url(env("REDIS_URL"))
        self.prefix = env("DROVER_PREFIX") + "-validation-" + secrets.token_hex(4)
        self.c = drover.Client(self.r, prefix=self.prefix)

    def tearDown(self):
        for k in self.r.scan_iter(match=self.prefix + "*"):
            self.r.delete(k)

    def keys(self):
        return sorted(self.r.scan_iter(match=self.prefix + "*"))

    def enqueue(self, **kw):
        call = {"queue": "cust-a", "task": "send", "args": {"n": 1}}
        call.update(kw)
        q, task, args = call.pop("queue"), call.pop("task"), call.pop("args")
        return self.c.enqueue(q, task, args, **call)

    def test_each_bad_input_is_refused_naming_its_field_and_writes_nothing(self):
        for kw, field in BAD:
            with self.subTest(input=kw):
                with self.assertRaises(InvalidArgument) as cm:
                    self.enqueue(**kw)
                self.assertEqual(cm.exception.field, field, str(cm.exception))
                self.assertIsInstance(cm.exception, ValueError)
                self.assertIsNone(cm.exception.index)
                self.assertIn(field, str(cm.exception))
                self.assertEqual(self.keys(), [])

    def test_a_good_message_writes_keys(self):
        # The control for the test above: the check for keys can fail.
        _, pos = self.enqueue(queue="cust-a", max_attempts=3, headers={"tenant": "acme"})
        self.assertGreater(pos, 0)
        self.assertNotEqual(self.keys(), [])

    def test_limits_are_inclusive(self):
        for kw in ({"queue": "q" * 200}, {"id": "x" * 512}, {"id": "é" * 256},
                   {"max_attempts": 2 ** 63 - 1}, {"max_attempts": None}, {"delay": 0},
                   {"due": datetime.datetime(1960, 1, 1, tzinfo=datetime.timezone.utc)},
                   {"args": {"s": "\ud800"}}):
            with self.subTest(input=kw):
                _, res = self.enqueue(**kw)
                self.assertGreaterEqual(res, 0)

    def test_one_bad_job_in_a_batch_writes_none(self):
        jobs = [Job("cust-a", "send", {"i": i}) for i in range(5)]
        jobs.insert(3, Job("cust b", "send"))
        with self.assertRaises(InvalidArgument) as cm:
            self.c.enqueue_many(jobs)
        self.assertEqual((cm.exception.field, cm.exception.index), ("queue", 3))
        self.assertIn("jobs[3]: queue:", str(cm.exception))
        self.assertEqual(self.keys(), [])
        jobs[3] = Job("cust-a", "send", {"x": float("nan")})
        with self.assertRaises(InvalidArgument) as cm:
            self.c.enqueue_many(jobs)
        self.assertEqual((cm.exception.field, cm.exception.index), ("args", 3))
        self.assertEqual(self.keys(), [])

    def test_revoke_and_status_refuse_a_bad_queue_name(self):
        for call in (lambda: self.c.status("cust a", "x"), lambda: self.c.revoke("cust/a", "x")):
            with self.assertRaises(InvalidArgument) as cm:
                call()
            self.assertEqual(cm.exception.field, "queue")
        self.assertEqual(self.keys(), [])


class HTTPBodyTests(unittest.TestCase):
    """The HTTP producer refuses the same inputs before sending."""

    def test_each_bad_input_is_refused_before_sending(self):
        for kw, field in BAD:
            with self.subTest(input=kw):
                j = {"queue": "cust-a", "task": "send", "args": None}
                j.update(kw)
                with self.assertRaises(InvalidArgument) as cm:
                    _job(Job(**j))
                self.assertEqual(cm.exception.field, field)

    def test_a_batch_names_the_job(self):
        with self.assertRaises(InvalidArgument) as cm:
            drover.HTTPClient("http://127.0.0.1:9", "t").enqueue_many(
                "cust-a", [Job("cust-a", "send"), Job("cust-a", "send", max_attempts=-1)])
        self.assertEqual((cm.exception.field, cm.exception.index), ("max_attempts", 1))


if __name__ == "__main__":
    unittest.main()
