// The pool module speaks docs/process-pool.md's protocol: this suite plays
// the worker's side over fds 3 and 4 (the Go side is tested through the
// executor in worker/executor/pool_node_test.go), and runs per-task mode
// with an envelope on stdin.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { readFrames, writeFrame } from "../dist/pool.js";

const program = fileURLToPath(new URL("pool_tasks.mjs", import.meta.url));

/** A pooled child with the worker's side of its pipes. */
function startChild() {
  const child = spawn(process.execPath, [program], {
    stdio: ["ignore", "pipe", "pipe", "pipe", "pipe"],
    env: { ...process.env, DROVER_POOL_PROTOCOL: "1" },
  });
  const frames = readFrames(child.stdio[4])[Symbol.asyncIterator]();
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (b) => (stdout += b));
  child.stderr.on("data", (b) => (stderr += b));
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  let seq = 0;
  return {
    child, exited,
    output: () => ({ stdout, stderr }),
    next: async () => (await frames.next()).value,
    send(task, extra = {}) {
      seq++;
      const frame = { type: "task", seq, queue: "emails", task, id: `m-${seq}`, attempt: 0, position: 1000 + seq,
        envelope: { id: `m-${seq}`, queue: "emails", task, args: { to: "a@example.com" }, attempt: 0 }, ...extra };
      const head = Buffer.alloc(4);
      const body = Buffer.from(JSON.stringify(frame));
      head.writeUInt32BE(body.length);
      child.stdio[3].write(Buffer.concat([head, body]));
      return seq;
    },
  };
}

describe("pooled child", () => {
  it("says ready, serves one result per task with its seq, and exits 0 at end of file", async () => {
    const c = startChild();
    assert.deepEqual(await c.next(), { type: "ready", protocol: 1 });
    const cases = [
      ["echo", { outcome: "success" }],
      ["later", { outcome: "retry", message: "not uploaded yet" }],
      ["fail", { outcome: "failure", message: "RangeError: width must be > 0" }],
      ["missing", { outcome: "failure", message: 'no Node handler for task "missing"' }],
    ];
    for (const [task, want] of cases) {
      const seq = c.send(task);
      assert.deepEqual(await c.next(), { type: "result", seq, ...want }, task);
    }
    const seq = c.send("patient", { deadline: new Date(Date.now() + 20).toISOString() });
    const res = await c.next();
    assert.equal(res.outcome, "timeout");
    assert.equal(res.seq, seq);
    assert.match(res.message, /deadline passed/);
    c.child.stdio[3].end();
    assert.equal(await c.exited, 0);
    const { stdout, stderr } = c.output();
    assert.match(stdout, /^hello a@example.com attempt 0 queue emails\n/);
    assert.match(stderr, /to stderr\n/);
    assert.match(stderr, /RangeError: width must be > 0\n\s+at fail/, "the failure's stack goes to stderr");
  });

  it("lets a handler's process.exit end the child at once (a crash mid-task)", async () => {
    const c = startChild();
    await c.next();
    c.send("crash");
    assert.equal(await c.exited, 7);
    assert.match(c.output().stderr, /segfault imminent/);
  });

  it("refuses to run outside a pool", () => {
    const r = spawnSync(process.execPath, ["--input-type=module", "-e",
      `import { serve } from ${JSON.stringify(new URL("../dist/pool.js", import.meta.url).href)}; serve({});`],
    { env: { ...process.env, DROVER_POOL_PROTOCOL: "" }, encoding: "utf8" });
    assert.equal(r.status, 126);
    assert.match(r.stderr, /not started as a pooled child/);
  });
});

// The environment without what per-task mode reads (the Go test sets DROVER_QUEUE for the fleet suite).
const perTaskFree = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("DROVER_")));

describe("per-task mode", () => {
  const run = (task, env = {}) => spawnSync(process.execPath, [program], {
    input: JSON.stringify({ id: "m-1", queue: "emails", task, args: { to: "b@example.com" }, attempt: 2 }),
    env: { ...perTaskFree, DROVER_TASK: task, ...env }, encoding: "utf8",
  });
  it("maps outcomes to exit codes", () => {
    const ok = run("echo");
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal(ok.stdout, "hello b@example.com attempt 2 queue emails\n");
    assert.equal(run("later").status, 75);
    const failed = run("fail");
    assert.equal(failed.status, 1);
    assert.match(failed.stderr, /drover task: failure: RangeError: width must be > 0/);
    assert.equal(run("patient", { DROVER_DEADLINE: new Date(Date.now() + 20).toISOString() }).status, 124);
    const stuck = run("patient"); // no deadline: its promise can never settle
    assert.equal(stuck.status, 1);
    assert.match(stuck.stderr, /never settled/);
  });
});

it("writeFrame and readFrames agree on the framing", async () => {
  const { openSync, closeSync, mkdtempSync, createReadStream } = await import("node:fs");
  const { join } = await import("node:path");
  const { tmpdir } = await import("node:os");
  const path = join(mkdtempSync(join(tmpdir(), "drover-node-")), "frames");
  const fd = openSync(path, "w");
  writeFrame(fd, { type: "x", n: 1, s: "é" });
  writeFrame(fd, { type: "y" });
  closeSync(fd);
  const got = [];
  for await (const f of readFrames(createReadStream(path))) got.push(f);
  assert.deepEqual(got, [{ type: "x", n: 1, s: "é" }, { type: "y" }]);
});
