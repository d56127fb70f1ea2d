// The lone enqueue scripts' plan and the estimate of Redis's clock, on
// fakes (no server): how a call's messages are grouped into enqueue-one,
// enqueue-many and enqueue-spread calls, and when TIME is read.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { planLone } from "../dist/enqueue_lone.js";
import { REDIS_CLOCK_TTL_MS, RedisClock, clockArg } from "../dist/redis_clock.js";

/** The plan as text: one "kind:q1.n,q2.n" per call (queue and message number). */
function show(plan) {
  return plan.map((c) => `${c.kind}:${c.msgs.map((m) => m.id).join(",")}`);
}

/** Messages from "a a b c": a queue each, ids a.1, a.2, b.1, c.1. */
function msgs(text) {
  const n = new Map();
  return text.split(" ").map((q) => {
    n.set(q, (n.get(q) ?? 0) + 1);
    return { queue: q, id: `${q}.${n.get(q)}`, env: "{}" };
  });
}

describe("planLone", () => {
  const cases = [
    { name: "a lone message: enqueue-one", in: "a", max: 1000, spread: 256, want: ["one:a.1"] },
    { name: "one queue, several: enqueue-many in order", in: "a a a", max: 1000, spread: 256, want: ["many:a.1,a.2,a.3"] },
    { name: "one message to each of several queues: one spread call", in: "a b c", max: 1000, spread: 256, want: ["spread:a.1,b.1,c.1"] },
    { name: "mixed: the lone queues spread, the other its own call", in: "a b a c a", max: 1000, spread: 256,
      want: ["many:a.1,a.2,a.3", "spread:b.1,c.1"] },
    { name: "one lone queue beside a many: enqueue-one", in: "a b a", max: 1000, spread: 256, want: ["many:a.1,a.2", "one:b.1"] },
    { name: "past the per-call limit: chunks in order, a last chunk of one is enqueue-one", in: "a a a a a", max: 2, spread: 256,
      want: ["many:a.1,a.2", "many:a.3,a.4", "one:a.5"] },
    { name: "past the spread limit: another spread call, a last one of one queue is enqueue-one", in: "a b c d e", max: 1000, spread: 2,
      want: ["spread:a.1,b.1", "spread:c.1,d.1", "one:e.1"] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plan = planLone(msgs(c.in), c.max, c.spread);
      assert.deepEqual(show(plan), c.want, `want ${c.want}, have ${show(plan)}`);
    });
  }

  it("puts every message in exactly one call at the default spread limit", () => {
    const m = [...msgs(Array.from({ length: 600 }, (_, i) => `q${i}`).join(" ")), ...msgs("x x")];
    const plan = planLone(m, 1000);
    assert.deepEqual(plan.map((c) => [c.kind, c.msgs.length]), [["spread", 256], ["spread", 256], ["spread", 88], ["many", 2]]);
    assert.equal(new Set(plan.flatMap((c) => c.msgs)).size, m.length);
  });
});

/** A TIME reader whose replies the test hands out; counts the reads. */
function fakeTime() {
  const f = { reads: 0, waiting: [] };
  f.time = () => { f.reads++; return new Promise((resolve, reject) => f.waiting.push({ resolve, reject })); };
  f.answer = (sec, us) => f.waiting.shift().resolve([String(sec), String(us)]);
  f.fail = () => f.waiting.shift().reject(new Error("connection lost"));
  return f;
}

describe("RedisClock", () => {
  it("reads TIME on first use, then estimates from the local clock until the reading is 5 s old", async () => {
    let mono = 1000;
    const clock = new RedisClock(() => mono);
    const r = fakeTime();
    const first = clock.now(r);
    mono += 3; // the round trip: the reading is taken as of its reply
    r.answer(1700000000, 250000);
    assert.equal(await first, 1700000000250000);
    mono += 1.5;
    assert.equal(await clock.now(r), 1700000000251500);
    mono += REDIS_CLOCK_TTL_MS - 2;
    assert.equal(await clock.now(r), 1700000000250000 + (REDIS_CLOCK_TTL_MS - 0.5) * 1000);
    assert.equal(r.reads, 1, "one TIME within the 5 s");
    mono += 0.5; // 5 s old: read again
    const again = clock.now(r);
    assert.equal(r.reads, 2);
    r.answer(1700000005, 260000);
    assert.equal(await again, 1700000005260000);
  });

  it("shares one TIME in flight: the others use the older reading, or none", async () => {
    let mono = 0;
    const clock = new RedisClock(() => mono);
    const r = fakeTime();
    const reading = clock.now(r);
    assert.equal(await clock.now(r), 0, "no reading yet: none");
    assert.equal(r.reads, 1);
    r.answer(1700000000, 0);
    await reading;
    mono += REDIS_CLOCK_TTL_MS + 1;
    const rereading = clock.now(r);
    assert.equal(await clock.now(r), 1700000000000000 + (REDIS_CLOCK_TTL_MS + 1) * 1000, "the older reading meanwhile");
    assert.equal(r.reads, 2);
    r.answer(1700000005, 1000);
    assert.equal(await rereading, 1700000005001000);
  });

  it("answers 0 when TIME fails or answers nonsense, and tries again next time", async () => {
    const clock = new RedisClock(() => 0);
    const r = fakeTime();
    const failed = clock.now(r);
    r.fail();
    assert.equal(await failed, 0);
    const odd = clock.now(r);
    r.waiting.shift().resolve(["soon", "7"]);
    assert.equal(await odd, 0);
    const ok = clock.now(r);
    r.answer(1700000000, 5);
    assert.equal(await ok, 1700000000000005);
    assert.equal(r.reads, 3);
  });

  it("formats the estimate as the scripts take it", () => {
    assert.equal(clockArg(1700000000000005), "1700000000000005");
    assert.equal(clockArg(0), "0");
    assert.equal(clockArg(NaN), "0");
  });
});

describe("generated ids", () => {
  it("are distinct, well formed and in creation order across refills of the random pool", async () => {
    const { newId } = await import("../dist/ids.js");
    const ids = Array.from({ length: 2000 }, () => newId()); // 4 pool refills of 512 ids
    assert.equal(new Set(ids).size, ids.length);
    const randoms = new Set();
    for (const id of ids) {
      const m = /^js-([0-9a-f]+)-([0-9a-f]{16})$/.exec(id);
      assert.ok(m, `malformed id ${id}`);
      randoms.add(m[2]);
    }
    assert.equal(randoms.size, ids.length, "random parts repeat: the pool handed out bytes twice");
    for (let i = 1; i < ids.length; i++) {
      const ns = (id) => BigInt("0x" + id.split("-")[1]);
      assert.ok(ns(ids[i]) > ns(ids[i - 1]), `ids out of order at ${i}`);
    }
  });
});
