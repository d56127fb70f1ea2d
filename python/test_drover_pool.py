"""Tests of drover_pool, run by `python3 -m unittest` (and by a Go test)."""

import os
import struct
import subprocess
import sys
import unittest

import drover_pool

HERE = os.path.dirname(os.path.abspath(__file__))


class FrameTests(unittest.TestCase):
    def test_round_trip(self):
        r, w = os.pipe()
        try:
            drover_pool.write_frame(w, {"type": "task", "seq": 3, "envelope": {"a": [1, 2]}})
            os.close(w)
            w = -1
            self.assertEqual(drover_pool.read_frame(r), {"type": "task", "seq": 3, "envelope": {"a": [1, 2]}})
            self.assertIsNone(drover_pool.read_frame(r))
        finally:
            os.close(r)
            if w >= 0:
                os.close(w)

    def test_cut_short_frame_is_a_protocol_error(self):
        r, w = os.pipe()
        os.write(w, struct.pack(">I", 10) + b"{}")
        os.close(w)
        with self.assertRaises(drover_pool.ProtocolError):
            drover_pool.read_frame(r)
        os.close(r)

    def test_deadline_with_nanoseconds(self):
        d = drover_pool.parse_deadline("2026-11-23T21:05:00.123456789Z")
        self.assertEqual((d.year, d.second, d.microsecond), (2026, 0, 123456))
        self.assertIsNone(drover_pool.parse_deadline(None))


class RunOneTests(unittest.TestCase):
    def frame(self, task, **kw):
        f = {"type": "task", "seq": 9, "queue": "q", "task": task, "id": "m1", "attempt": 2,
             "position": 17, "envelope": {"args": {"n": 1}}}
        f.update(kw)
        return f

    def test_outcomes(self):
        seen = {}

        def ok(envelope, ctx):
            seen["args"], seen["attempt"], seen["queue"] = envelope["args"], ctx.attempt, ctx.queue
            seen["traceparent"] = ctx.traceparent

        def retry(envelope, ctx):
            raise drover_pool.Retry("busy")

        def fail(envelope, ctx):
            raise ValueError("bad width")

        h = {"ok": ok, "retry": retry, "fail": fail}
        self.assertEqual(drover_pool.run_one(h, self.frame("ok")), {"type": "result", "seq": 9, "outcome": "success"})
        self.assertEqual(seen, {"args": {"n": 1}, "attempt": 2, "queue": "q", "traceparent": ""})
        self.assertEqual(drover_pool.run_one(h, self.frame("retry"))["outcome"], "retry")
        stderr = sys.stderr
        try:
            sys.stderr = open(os.devnull, "w")
            r = drover_pool.run_one(h, self.frame("fail"))
        finally:
            sys.stderr.close()
            sys.stderr = stderr
        self.assertEqual((r["outcome"], r["message"]), ("failure", "ValueError: bad width"))
        r = drover_pool.run_one(h, self.frame("missing"))
        self.assertEqual(r["outcome"], "failure")
        self.assertIn("missing", r["message"])

    def test_star_serves_any_task(self):
        r = drover_pool.run_one({"*": lambda e, c: None}, self.frame("anything"))
        self.assertEqual(r["outcome"], "success")


class ServeTests(unittest.TestCase):
    """A real child process speaking the protocol on fds 3 and 4."""

    def test_serves_tasks_until_end_of_file(self):
        task_r, task_w = os.pipe()
        res_r, res_w = os.pipe()
        env = dict(os.environ, DROVER_POOL_PROTOCOL="1", PYTHONPATH=HERE)

        def fds():
            # Move both ends above 4 first, so that neither dup2 clobbers
            # the other.
            a, b = os.dup(task_r), os.dup(res_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        p = subprocess.Popen([sys.executable, os.path.join(HERE, "drover_pool.py")], env=env,
                             preexec_fn=fds, pass_fds=(3, 4), stdout=subprocess.PIPE)
        os.close(task_r)
        os.close(res_w)
        try:
            self.assertEqual(drover_pool.read_frame(res_r), {"type": "ready", "protocol": 1})
            for seq in (1, 2, 3):
                drover_pool.write_frame(task_w, {"type": "task", "seq": seq, "task": "t", "envelope": {}})
                self.assertEqual(drover_pool.read_frame(res_r), {"type": "result", "seq": seq, "outcome": "success"})
            os.close(task_w)
            task_w = -1
            self.assertEqual(p.wait(timeout=60), 0)
        finally:
            if task_w >= 0:
                os.close(task_w)
            os.close(res_r)
            p.kill()
            p.wait()
            p.stdout.close()

    def test_refuses_to_run_outside_a_pool(self):
        env = dict(os.environ)
        env.pop("DROVER_POOL_PROTOCOL", None)
        p = subprocess.run([sys.executable, os.path.join(HERE, "drover_pool.py")], env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 126)
        self.assertIn(b"not started as a pooled child", p.stderr)


if __name__ == "__main__":
    unittest.main()
