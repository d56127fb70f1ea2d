// The Node client against a real fleet. Run by the Go test
// examples.TestNodeClientAgainstAFleet, which starts Redis, ZooKeeper,
// `drover worker`, `drover scheduler` and `drover web` and sets:
//
//   REDIS_URL, DROVER_PREFIX; DROVER_QUEUE (its tasks run fleet_tasks.mjs
//   in a pool; backoff of an hour, so a retry stays visible);
//   DROVER_FAMILY_PREFIX (an ordered family running fleet_tasks.mjs);
//   DONE_FILE (what ran); DROVER_URL, DROVER_TOKEN (a producer token);
//   NODE_FLEET_KEYS (family keys for the many-keys test).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Redis } from "ioredis";
import { Client, DroverError, HTTPClient, HTTPError, InvalidArgument, LAYOUT_VERSION, LayoutError, OutcomeUnknown } from "../dist/index.js";
import { env, keysUnder, randomSuffix, waitFor } from "./helpers.js";

/** What ran: one { queue, id, seq } per line of DONE_FILE, in the order run. */
function ran() {
  let text = "";
  try { text = readFileSync(env("DONE_FILE"), "utf8"); } catch (e) { if (e.code !== "ENOENT") throw e; }
  return text.split("\n").filter(Boolean).map((l) => { const [queue, id, seq] = l.split(" "); return { queue, id, seq }; });
}
const ranIds = () => new Set(ran().map((r) => r.id));

const stateIs = (c, q, id, state) => async () => { const s = await c.status(q, id); return s.state === state ? s : null; };

describe("the Redis client", () => {
  let redis, c, q;
  before(async () => {
    redis = new Redis(env("REDIS_URL"));
    c = await Client.connect({ redis, prefix: env("DROVER_PREFIX") });
    q = env("DROVER_QUEUE");
  });
  after(() => redis.disconnect());

  it("enqueues a message that runs: pending, then succeeded", async () => {
    const { id, result } = await c.enqueue(q, "record", { seq: 1 }, { headers: { from: "node" } });
    assert.ok(result > 0);
    const st = await waitFor("succeeded", stateIs(c, q, id, "succeeded"));
    assert.equal(st.task, "record");
    assert.equal(st.exitCode, 0);
    assert.ok(ranIds().has(id));
  });

  it("reports pending with what is ahead on a queue nobody runs", async () => {
    const idle = `node-idle-${randomSuffix()}`;
    const [a, b] = await c.enqueueMany([{ queue: idle, task: "record" }, { queue: idle, task: "record" }]);
    const st = await c.status(idle, b.id);
    assert.equal(st.state, "pending");
    assert.equal(st.position, b.result);
    assert.equal(st.ahead, 1);
    assert.ok(a.result < b.result, "positions in the order given");
    assert.ok(await redis.sismember(`${env("DROVER_PREFIX")}:queues`, idle), "the queue is registered for discovery");
  });

  it("enqueues a batch: each message runs once", async () => {
    const jobs = Array.from({ length: 150 }, (_, i) => ({ queue: q, task: "record", args: { seq: i } }));
    const res = await c.enqueueMany(jobs);
    const ids = res.map((r) => r.id);
    assert.equal(new Set(ids).size, 150);
    assert.ok(res.every((r) => r.result > 0));
    await waitFor("150 runs", () => ids.every((id) => ranIds().has(id)));
    const counts = new Map();
    for (const r of ran()) counts.set(r.id, (counts.get(r.id) ?? 0) + 1);
    assert.deepEqual(ids.filter((id) => counts.get(id) !== 1), []);
  });

  it("dedupes a caller's id, delayed or already run", async () => {
    const key = `node-key-${randomSuffix()}`;
    assert.equal((await c.enqueue(q, "record", null, { id: key, delay: 3600 })).result, 0);
    assert.equal((await c.enqueue(q, "record", null, { id: key, delay: 3600 })).result, -1);
    assert.ok(await c.revoke(q, key));
    const ranKey = `node-ran-${randomSuffix()}`;
    assert.ok((await c.enqueue(q, "record", null, { id: ranKey })).result > 0);
    await waitFor("the keyed message to run", () => ranIds().has(ranKey));
    assert.equal((await c.enqueue(q, "record", null, { id: ranKey })).result, -1, "inside the dedupe window after it ran");
  });

  it("delays a message, reports it delayed, revokes it (recorded revoked, by whom)", async () => {
    const due = new Date(Date.now() + 3600_000);
    const { id, result } = await c.enqueue(q, "record", null, { due });
    assert.equal(result, 0);
    const st = await c.status(q, id);
    assert.equal(st.state, "delayed");
    assert.equal(Math.abs(Date.parse(st.dueAt) - due.getTime()) <= 1, true, `${st.dueAt} vs ${due.toISOString()}`);
    assert.ok(await c.revoke(q, id, { by: "node-suite" }));
    assert.equal(await c.revoke(q, id), false);
    const gone = await c.status(q, id);
    assert.equal(gone.state, "revoked");
    assert.equal(gone.by, "node-suite");
    const other = await c.enqueue(q, "record", null, { delay: 3600 });
    assert.ok(await c.revoke(q, other.id));
    assert.match((await c.status(q, other.id)).by, /@/, "user@host, as ctl records it");
  });

  it("runs a message when its delay passes", async () => {
    const { id, result } = await c.enqueue(q, "record", null, { delay: 0.2 });
    assert.equal(result, 0);
    await waitFor("the delayed message to run", stateIs(c, q, id, "succeeded"));
  });

  it("follows a retry (retrying, with the last error) and a dead letter", async () => {
    const retry = await c.enqueue(q, "later");
    const st = await waitFor("retrying", stateIs(c, q, retry.id, "retrying"));
    assert.equal(st.attempt, 1);
    assert.ok(st.dueAt);
    assert.ok(await c.revoke(q, retry.id), "a waiting retry is revocable");
    const dead = await c.enqueue(q, "fail", null, { maxAttempts: 1 });
    const d = await waitFor("dead", stateIs(c, q, dead.id, "dead"));
    assert.match(d.error, /this task always fails/);
    assert.equal(d.task, "fail");
  });

  it("adds, lists, disables, enables and removes a schedule that fires each slot once", async () => {
    const name = `node-every-${randomSuffix()}`;
    await c.scheduleAdd(name, { queue: q, task: "record", schedule: { type: "interval", every: "1s" } });
    assert.ok((await c.schedules()).some((s) => s.name === name));
    const prefix = `sched:${name}:`;
    const fires = () => ran().filter((r) => r.id.startsWith(prefix)).map((r) => r.id);
    await waitFor("3 fires", () => fires().length >= 3);
    await c.scheduleDisable(name);
    assert.equal((await c.scheduleGet(name)).definition.enabled, false);
    await c.scheduleEnable(name);
    assert.equal("enabled" in (await c.scheduleGet(name)).definition, false);
    await c.scheduleUpdate(name, { queue: q, task: "record", schedule: { type: "interval", every: "1h" } });
    assert.equal((await c.scheduleGet(name)).definition.schedule.every, "1h");
    assert.ok(await c.scheduleRemove(name));
    assert.equal(await c.scheduleGet(name), null);
    const all = fires();
    assert.equal(new Set(all).size, all.length, `a slot ran twice: ${all}`);
  });

  it("speaks the layout the fleet marks", async () => {
    assert.equal(Number(await redis.get(env("DROVER_PREFIX") + ":layout")), LAYOUT_VERSION);
  });

  it("refuses another layout at connect, writing nothing", async () => {
    const other = `${env("DROVER_PREFIX")}-node-layout-${randomSuffix()}`;
    await redis.set(other + ":layout", LAYOUT_VERSION + 1);
    try {
      await assert.rejects(Client.connect({ redis, prefix: other }), (e) => e instanceof LayoutError && /upgrade the client/.test(e.message));
      assert.deepEqual(await keysUnder(redis, other), [other + ":layout"]);
      await redis.set(other + ":layout", LAYOUT_VERSION);
      await Client.connect({ redis, prefix: other });
    } finally {
      await redis.del(other + ":layout");
    }
  });
});

describe("the durable mode", () => {
  // The fleet's Redis has no replica: an enqueue needing one is never
  // confirmed. DURABLE_MASTER_URL has one (DURABLE_REPLICA_URL).
  let redis, master, replica, q, prefix;
  before(() => {
    redis = new Redis(env("REDIS_URL"));
    master = new Redis(env("DURABLE_MASTER_URL"));
    replica = new Redis(env("DURABLE_REPLICA_URL"));
    q = env("DROVER_QUEUE") + "-durable"; // no task runs it
    prefix = env("DROVER_PREFIX");
  });
  after(() => { redis.disconnect(); master.disconnect(); replica.disconnect(); });
  const msgKey = (queue) => `${prefix}:{${queue}}:msg`;

  it("rejects an unconfirmed enqueue with OutcomeUnknown naming every id; the retry is a duplicate", async () => {
    const c = await Client.connect({ redis, prefix, durable: { replicas: 1, timeoutMs: 50 } });
    await assert.rejects(c.enqueue(q, "record", { n: 1 }, { id: "node-durable-1" }), (e) => {
      assert.ok(e instanceof OutcomeUnknown && e instanceof DroverError);
      assert.deepEqual(e.ids, ["node-durable-1"]);
      assert.match(e.reason, /confirmed by 0 of 1 replicas/);
      return true;
    });
    let ids;
    await assert.rejects(c.enqueueMany([{ queue: q, task: "record", id: "node-durable-2" }, { queue: q, task: "record" }]), (e) => {
      assert.ok(e instanceof OutcomeUnknown);
      ids = e.ids;
      return true;
    });
    assert.equal(ids.length, 2);
    assert.equal(ids[0], "node-durable-2");
    // The writes reached the master: a retry finds them, it does not copy them.
    const plain = await Client.connect({ redis, prefix });
    assert.equal((await plain.enqueue(q, "record", null, { id: "node-durable-1" })).result, -1);
    assert.equal(await redis.hexists(msgKey(q), ids[1]), 1);
  });

  it("resolves once the replica confirms, the message on the replica, even after the scripts were flushed", async () => {
    const c = await Client.connect({ redis: master, prefix, durable: { replicas: 1, timeoutMs: 5000 } });
    const one = await c.enqueue(q, "record", { n: 1 });
    assert.ok(one.result > 0);
    assert.equal(await replica.hexists(msgKey(q), one.id), 1, "acknowledged: the replica holds it");
    // NOSCRIPT: the scripts are sent again in a second pipeline, which must end with the wait too.
    await master.script("FLUSH");
    const many = await c.enqueueMany([{ queue: q, task: "record" }, { queue: q + "-b", task: "record" }]);
    assert.ok(many.every((r) => r.result > 0));
    assert.equal(await replica.hexists(msgKey(q), many[0].id), 1);
    assert.equal(await replica.hexists(msgKey(q + "-b"), many[1].id), 1);
  });

  it("refuses aof on a Redis without WAITAOF before writing anything", async (t) => {
    const version = /redis_version:(\d+)\.(\d+)/.exec(await redis.info("server"));
    if (Number(version[1]) > 7 || (Number(version[1]) === 7 && Number(version[2]) >= 2)) return t.skip("this Redis has WAITAOF (7.2+)");
    const c = await Client.connect({ redis, prefix, durable: { aof: true } });
    await assert.rejects(c.enqueue(q, "record", null, { id: "node-durable-aof" }), (e) => e instanceof DroverError && /WAITAOF/.test(e.message));
    assert.equal(await redis.hexists(msgKey(q), "node-durable-aof"), 0);
  });

  it("checks the option", () => {
    for (const [durable, field] of [[{ replicas: 0 }, "durable.replicas"], [{ timeoutMs: 0 }, "durable.timeoutMs"],
      [{ timeoutMs: 1.5 }, "durable.timeoutMs"], [{ aof: "yes" }, "durable.aof"], [5, "durable"]]) {
      assert.throws(() => new Client({ redis, prefix, durable }), (e) => e instanceof InvalidArgument && e.field === field, JSON.stringify(durable));
    }
  });
});

describe("the HTTP producer", () => {
  let h, q;
  before(() => { h = new HTTPClient(env("DROVER_URL"), env("DROVER_TOKEN")); q = env("DROVER_QUEUE"); });

  it("enqueues a message that runs", async () => {
    const out = await h.enqueue(q, "record", { via: "http" });
    await waitFor("succeeded", async () => (await h.status(q, out.id)).state === "succeeded");
    assert.ok(ranIds().has(out.id));
  });

  it("delays and revokes", async () => {
    const out = await h.enqueue(q, "record", null, { delay: 3600 });
    assert.ok(out.delayed);
    await h.revoke(q, out.id);
    assert.equal((await h.status(q, out.id)).state, "revoked");
  });

  it("is refused with a bad token", async () => {
    await assert.rejects(new HTTPClient(env("DROVER_URL"), "not-a-token").enqueue(q, "record"), (e) => e instanceof HTTPError && e.status === 401);
  });
});

describe("many family keys", () => {
  let redis, c;
  before(async () => {
    redis = new Redis(env("REDIS_URL"));
    c = await Client.connect({ redis, prefix: env("DROVER_PREFIX") });
  });
  after(() => redis.disconnect());

  it("runs each message of each key exactly once, in order per key", async () => {
    const keys = Number(env("NODE_FLEET_KEYS"));
    const perKey = 3;
    const fam = env("DROVER_FAMILY_PREFIX");
    const jobs = [];
    for (let s = 0; s < perKey; s++) {
      for (let k = 0; k < keys; k++) jobs.push({ queue: `${fam}${k}`, task: "record", args: { seq: s } });
    }
    // One call per 5,000 messages: each a pipeline of one script call per queue.
    for (let i = 0; i < jobs.length; i += 5000) await c.enqueueMany(jobs.slice(i, i + 5000));
    const mine = () => ran().filter((r) => r.queue.startsWith(fam));
    await waitFor(`${jobs.length} runs on ${keys} keys`, () => mine().length >= jobs.length, 300_000);
    const byKey = new Map();
    for (const r of mine()) {
      if (!byKey.has(r.queue)) byKey.set(r.queue, []);
      byKey.get(r.queue).push(Number(r.seq));
    }
    assert.equal(byKey.size, keys);
    const want = Array.from({ length: perKey }, (_, i) => i).join(",");
    const wrong = [...byKey].filter(([, seqs]) => seqs.join(",") !== want);
    assert.deepEqual(wrong.slice(0, 5), [], `${wrong.length} keys ran other than once each in order`);
  });
});
