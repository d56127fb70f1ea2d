// What an enqueue costs Redis, counted, and the order the lone scripts
// keep. Needs COUNT_REDIS_URL: a Redis nobody else uses (INFO
// commandstats counts every client's commands), which the Go test
// examples.TestNodeClientAgainstAFleet starts for this suite.
//
// Commands are counted from INFO commandstats deltas, the commands a
// script calls included; the probe's own INFO calls are left out.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import { Client } from "../dist/index.js";
import { env, randomSuffix } from "./helpers.js";

/** Calls per command (lower case) since the server started. */
async function commandCalls(probe) {
  const out = {};
  for (const m of (await probe.info("commandstats")).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1]] = Number(m[2]);
  return out;
}

/** Counts the commands run while fn runs: per command, and in all (the probe's INFO left out). */
async function counted(probe, fn) {
  const before = await commandCalls(probe);
  const startedMs = performance.now();
  const value = await fn();
  const elapsedMs = performance.now() - startedMs;
  const after = await commandCalls(probe);
  const d = {};
  let total = 0;
  for (const [cmd, n] of Object.entries(after)) {
    if (cmd === "info") continue;
    const k = n - (before[cmd] ?? 0);
    if (k) { d[cmd] = k; total += k; }
  }
  const at = (cmd) => d[cmd] ?? 0;
  return { value, d, at, total, elapsedMs };
}

/** d without the commands named. */
function without(d, ...cmds) {
  return Object.fromEntries(Object.entries(d).filter(([cmd]) => !cmds.includes(cmd)));
}

/**
 * The most TIME reads the client's clock makes in elapsedMs: one on first
 * use, then one each time its reading is 5 s old (a contract of the clock,
 * not a timing assumption: the old client read TIME once a message).
 */
const maxClockReads = (elapsedMs) => Math.ceil(elapsedMs / 5000) + 1;

describe("what an enqueue costs Redis", () => {
  let redis, probe, prefix;
  before(async () => {
    redis = new Redis(env("COUNT_REDIS_URL"));
    probe = new Redis(env("COUNT_REDIS_URL"));
    prefix = `cost-${randomSuffix()}`;
  });
  after(() => { redis.disconnect(); probe.disconnect(); });

  /**
   * Sets each queue's :seq to Redis's clock 10 minutes ago, as if its last
   * message had come then. A new queue's first message takes its position
   * from TIME inside the script, and the client's estimate (which lags
   * Redis's clock by up to the reading's round trip, more on a loaded
   * machine) takes a few calls to pass it, each with a second SET.
   */
  async function lastMessageLongAgo(queues) {
    const [sec, us] = await probe.time();
    const longAgo = String((Number(sec) - 600) * 1_000_000 + Number(us));
    await redis.mset(...queues.flatMap((q) => [`${prefix}:{${q}}:seq`, longAgo]));
  }

  /**
   * Checks run's counts, the TIME reads aside: per command, want (with one
   * SET a message; a second SET is allowed only when the client read TIME
   * again during the run, after which its estimate may lag :seq for a few
   * calls), and in all at most most plus the TIME reads the clock may make.
   */
  function assertCounts(run, want, most) {
    const reads = maxClockReads(run.elapsedMs);
    const time = run.at("time");
    assert.ok(time <= reads, `want at most ${reads} TIME in ${run.elapsedMs.toFixed(0)}ms, have ${time}`);
    const asked = { ...want };
    let catchUp = 0;
    if (time > 0) {
      catchUp = Math.max(0, run.at("set") - want.set);
      delete asked.set;
    }
    assert.deepEqual(without(run.d, "time", ...(time > 0 ? ["set"] : [])), asked, `want ${JSON.stringify(want)}, have ${JSON.stringify(run.d)}`);
    const limit = most + Math.min(time, reads);
    assert.ok(run.total - catchUp <= limit, `want at most ${limit} commands, have ${run.total - catchUp}: ${JSON.stringify(run.d)}`);
  }

  it("a lone enqueue: one EVALSHA and HSETNX, SET, ZADD, GET, PUBLISH inside, TIME only now and then", async () => {
    const c = await Client.connect({ redis, prefix });
    const q = `lone-${randomSuffix()}`;
    await lastMessageLongAgo([q]);
    await c.enqueue(q, "t", { warm: true }); // registers the queue, reads the clock
    const N = 100;
    const run = await counted(probe, async () => {
      const res = [];
      for (let i = 0; i < N; i++) res.push(await c.enqueue(q, "t", { n: i }));
      return res;
    });
    assert.ok(run.value.every((r) => r.result > 0), "every message enqueued");
    console.log(`lone enqueue: ${(run.total / N).toFixed(2)} commands a message (${JSON.stringify(run.d)})`);
    assertCounts(run, { evalsha: N, get: N, hsetnx: N, publish: N, set: N, zadd: N }, 6 * N);
  });

  it("a lone enqueue without wake-ups: no GET of the owner, no PUBLISH", async () => {
    const c = await Client.connect({ redis, prefix, wakeups: false });
    const q = `quiet-${randomSuffix()}`;
    await lastMessageLongAgo([q]);
    await c.enqueue(q, "t", { warm: true });
    const N = 20;
    const run = await counted(probe, async () => { for (let i = 0; i < N; i++) await c.enqueue(q, "t", { n: i }); });
    console.log(`lone enqueue without wake-ups: ${(run.total / N).toFixed(2)} commands a message (${JSON.stringify(run.d)})`);
    assertCounts(run, { evalsha: N, hsetnx: N, set: N, zadd: N }, 4 * N);
  });

  it("a batch of 200 messages to 200 queues: one script call, one PUBLISH per owner", async () => {
    const c = await Client.connect({ redis, prefix });
    const s = randomSuffix();
    const qs = Array.from({ length: 200 }, (_, i) => `spread-${s}-${i}`);
    // Two members own them, as a fleet's members route queues (a batch channel each).
    const owner = (i) => `${prefix}:wake-b:member-${i < 120 ? "a" : "b"}`;
    await redis.mset(...qs.flatMap((q, i) => [`${prefix}:{${q}}:owner`, owner(i)]));
    await lastMessageLongAgo(qs);
    const jobs = (round) => qs.map((q, i) => ({ queue: q, task: "t", args: { i, round } }));
    await c.enqueueMany(jobs(0)); // registers the queues, reads the clock
    const run = await counted(probe, () => c.enqueueMany(jobs(1)));
    assert.ok(run.value.every((r) => r.result > 0), "every message enqueued");
    console.log(`enqueueMany of 200 queues: ${run.total} commands, ${(run.total / 200).toFixed(2)} a message (${JSON.stringify(run.d)})`);
    // One call; per queue HSETNX, SET … GET, ZADD, GET :owner; a PUBLISH per owner.
    assertCounts(run, { evalsha: 1, get: 200, hsetnx: 200, publish: 2, set: 200, zadd: 200 }, 1 + 4 * 200 + 2);
  });
});

describe("order across the enqueue paths", () => {
  let redis, prefix, c;
  before(async () => {
    redis = new Redis(env("COUNT_REDIS_URL"));
    prefix = `order-${randomSuffix()}`;
    c = await Client.connect({ redis, prefix });
  });
  after(() => redis.disconnect());

  it("positions strictly increase per queue across lone, spread, many and general calls; results in the jobs' order", async () => {
    const s = randomSuffix();
    const [a, b, d] = [`a-${s}`, `b-${s}`, `d-${s}`];
    const last = new Map(); // queue → its last position
    let n = 0;
    /** Sends jobs through send and checks each result against what Redis holds. */
    const check = async (jobs, send, { duplicates = [], delayed = [] } = {}) => {
      jobs.forEach((j) => { j.task ??= "t"; j.args = { n: n++ }; });
      const res = await send(jobs);
      assert.equal(res.length, jobs.length);
      for (const [i, j] of jobs.entries()) {
        const r = res[i];
        if (j.id !== undefined) assert.equal(r.id, j.id, `jobs[${i}]: want its own id`);
        if (duplicates.includes(i)) { assert.equal(r.result, -1, `jobs[${i}]: want -1 (a known id), have ${r.result}`); continue; }
        if (delayed.includes(i)) { assert.equal(r.result, 0, `jobs[${i}]: want 0 (delayed)`); continue; }
        const envelope = JSON.parse(await redis.hget(`${prefix}:{${j.queue}}:msg`, r.id));
        assert.deepEqual([envelope.queue, envelope.args], [j.queue, j.args], `jobs[${i}]: its result names another job's message`);
        assert.equal(Number(await redis.zscore(`${prefix}:{${j.queue}}:log`, r.id)), r.result, `jobs[${i}]: its position in the log`);
        const before = last.get(j.queue) ?? 0;
        assert.ok(r.result > before, `jobs[${i}] on ${j.queue}: want a position after ${before}, have ${r.result}`);
        last.set(j.queue, r.result);
      }
    };
    const one = (jobs) => Promise.all(jobs.map((j) => c.enqueue(j.queue, j.task, j.args, j.id ? { id: j.id } : {})));
    const many = (jobs) => c.enqueueMany(jobs);

    await check([{ queue: a }], one); // a new queue: enqueue-one beside the registry's SADD
    await check([{ queue: a }], one); // enqueue-one alone
    await check([{ queue: b }, { queue: a }, { queue: d }], many); // enqueue-spread
    await check([{ queue: a }, { queue: b }, { queue: a }, { queue: a }, { queue: d }, { queue: b }], many); // enqueue-many ×2, enqueue-one
    const key = `key-${s}`;
    await check([{ queue: a }, { queue: b, id: key }, { queue: a }], many); // a caller's id: the general script
    await check([{ queue: b, id: key }], many, { duplicates: [0] });
    await check([{ queue: b }, { queue: a, delay: 3600 }, { queue: b }], many, { delayed: [1] }); // a delay: general
    await check([{ queue: b }], one);
    // Past the limits: 1,500 messages to a (enqueue-many of 1,000 then 500), one each to 300 more queues (spread 256 + 44).
    const big = [];
    for (let i = 0; i < 1500; i++) {
      big.push({ queue: a });
      if (i % 5 === 0) big.push({ queue: `e-${s}-${i / 5}` });
    }
    await check(big, many);
    await redis.script("FLUSH"); // NOSCRIPT: the scripts go whole and answer the same
    await check([{ queue: a }], one);
    await check([{ queue: a }, { queue: b }, { queue: d }, { queue: d }], many);
    await check([{ queue: d, id: key }, { queue: b, id: key }], many, { duplicates: [1] });
  });
});
