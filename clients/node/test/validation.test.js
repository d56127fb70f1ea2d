// The client refuses what the Go producers refuse, names the field, and
// writes nothing (checked in Redis). Needs REDIS_URL and DROVER_PREFIX
// (set by the Go tests: examples.TestNodeClientAgainstAFleet).
//
// The shared table, python/tests/validation_cases.json, is checked
// against the Go producer by tools/pyscripts TestCorpusMatchesGoProducer
// and against the Python client by python/tests/test_validation.py.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { inspect } from "node:util";
import { Redis } from "ioredis";
import { Client, HTTPClient, InvalidArgument, RULES, checkJob, encodeArgs } from "../dist/index.js";
import { env, keysUnder, randomSuffix } from "./helpers.js";

const tablePath = new URL("../../../python/tests/validation_cases.json", import.meta.url);
const show = (v) => inspect(v, { depth: 2, maxStringLength: 40, breakLength: Infinity });
const DUE = new Date("2030-01-02T09:00:00Z");

// The API's name of the table's fields.
const FIELD = { max_attempts: "maxAttempts" };

/** Each case with its value: integers past 2^53 as bigint (exact, from the line's text), NaN and Infinity in raw args as numbers. */
function loadCases() {
  const lines = readFileSync(tablePath, "utf8").split("\n");
  return lines.filter((l) => l.trimStart().startsWith('{"field"')).map((line) => {
    const c = JSON.parse(line.trim().replace(/,$/, ""));
    if (c.repeat) c.value = c.repeat[0].repeat(c.repeat[1]);
    else if (c.raw !== undefined) c.value = lenientJSON(c.raw);
    else if (typeof c.value === "number" && !Number.isSafeInteger(c.value) && Number.isInteger(c.value)) {
      c.value = BigInt(/"value":\s*(-?\d+)/.exec(line)[1]);
    }
    return c;
  });
}

/** JSON that may hold NaN, Infinity and -Infinity, as a caller's values would. */
function lenientJSON(text) {
  const marked = text.replace(/-Infinity|Infinity|NaN/g, (m) => JSON.stringify("\u0000" + m));
  return JSON.parse(marked, (_, v) => (typeof v === "string" && v.startsWith("\u0000") ? Number(v.slice(1)) : v));
}

/** The client's verdict on one case, the other fields valid; a refusal must name the case's field. */
function nodeAccepts(c) {
  const field = FIELD[c.field] ?? c.field;
  const job = { queue: "corpus", task: "t" };
  try {
    if (c.field === "args") encodeArgs(c.value);
    // JSON null is the absent value for the optional fields (Go reads null as the zero value).
    else job[field] = c.value === null && ["id", "max_attempts", "headers"].includes(c.field) ? undefined : c.value;
    checkJob(job);
    return true;
  } catch (e) {
    if (!(e instanceof InvalidArgument)) throw e;
    assert.equal(e.field.split("[")[0], field, `${show(c)}: refused naming ${e.field}`);
    return false;
  }
}

describe("the shared table", () => {
  it("agrees case by case (python_valid: what the first-party clients do on purpose)", () => {
    const cases = loadCases();
    assert.ok(cases.length > 50, `${cases.length} cases`);
    for (const c of cases) {
      const want = c.python_valid ?? c.valid;
      assert.equal(nodeAccepts(c), want, `${c.field} ${String(c.value).slice(0, 40)}: ${c.python_why ?? c.why ?? ""}`);
    }
  });

  it("reads the rules the Go code generated", () => {
    assert.equal(RULES.queue.max_bytes, 200);
    assert.equal(RULES.id.max_bytes, 512);
    assert.deepEqual(RULES.queue.forbidden[0], [0, 32]);
  });
});

// Each bad input (issue 40's and their neighbours): the options over a
// valid message, and the field the refusal must name.
const BAD = [
  [{ queue: "cust-a b" }, "queue"],
  [{ queue: "cust/a" }, "queue"],
  [{ queue: "cust-a\n" }, "queue"],
  [{ queue: "c".repeat(305) }, "queue"],
  [{ queue: "" }, "queue"],
  [{ queue: ".." }, "queue"],
  [{ queue: "cust-\ud800" }, "queue"],
  [{ queue: 42 }, "queue"],
  [{ task: 7 }, "task"],
  [{ task: "" }, "task"],
  [{ task: null }, "task"],
  [{ id: 12345 }, "id"],
  [{ id: "x".repeat(513) }, "id"],
  [{ id: "é".repeat(257) }, "id"],
  [{ id: "" }, "id"],
  [{ args: { v: NaN } }, "args"],
  [{ args: [Infinity] }, "args"],
  [{ args: -Infinity }, "args"],
  [{ args: { n: 10n } }, "args"],
  [{ args: new Set([1, 2]) }, "args"],
  [{ args: { f() {} } }, "args"],
  [{ args: [undefined] }, "args"],
  [{ args: (() => { const o = {}; o.self = o; return o; })() }, "args"],
  [{ maxAttempts: -1 }, "maxAttempts"],
  [{ maxAttempts: 1.5 }, "maxAttempts"],
  [{ maxAttempts: true }, "maxAttempts"],
  [{ maxAttempts: "3" }, "maxAttempts"],
  [{ maxAttempts: 2 ** 63 }, "maxAttempts"],
  [{ maxAttempts: 2n ** 63n }, "maxAttempts"],
  [{ headers: { tenant: 5 } }, 'headers["tenant"]'],
  [{ headers: { a: null } }, 'headers["a"]'],
  [{ headers: [["a", "b"]] }, "headers"],
  [{ headers: new Map([["a", "b"]]) }, "headers"],
  [{ headers: "a=b" }, "headers"],
  [{ delay: 5, due: DUE }, "due"],
  [{ delay: -1 }, "delay"],
  [{ delay: NaN }, "delay"],
  [{ delay: Infinity }, "delay"],
  [{ delay: 1e12 }, "delay"],
  [{ delay: "10s" }, "delay"],
  [{ due: new Date("not a date") }, "due"],
  [{ due: 1893456000 }, "due"],
  [{ due: "2030-01-02T09:00:00Z" }, "due"],
];

function call(over) {
  const j = { queue: "cust-a", task: "send", args: { n: 1 }, ...over };
  const { queue, task, args, ...opts } = j;
  return [queue, task, args, opts];
}

describe("refusals on Redis", () => {
  let redis, c, prefix;
  before(async () => {
    redis = new Redis(env("REDIS_URL"));
    prefix = `${env("DROVER_PREFIX")}-node-validation-${randomSuffix()}`;
    c = await Client.connect({ redis, prefix });
  });
  after(async () => {
    const keys = await keysUnder(redis, prefix);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it("refuses each bad input naming its field and writes nothing", async () => {
    for (const [over, field] of BAD) {
      await assert.rejects(c.enqueue(...call(over)), (e) => {
        assert.ok(e instanceof InvalidArgument, `${show(over)}: ${e}`);
        assert.equal(e.field, field, e.message);
        assert.equal(e.index, undefined);
        assert.ok(e.message.includes(field), e.message);
        return true;
      }, `${String(Object.keys(over))}: accepted`);
      assert.deepEqual(await keysUnder(redis, prefix), [], `${show(Object.keys(over))} wrote keys`);
    }
  });

  it("writes keys for a good message (the control: the check for keys can fail)", async () => {
    const { result } = await c.enqueue("cust-a", "send", { n: 1 }, { maxAttempts: 3, headers: { tenant: "acme" } });
    assert.ok(result > 0);
    assert.notDeepEqual(await keysUnder(redis, prefix), []);
    await redis.del(...(await keysUnder(redis, prefix)));
  });

  it("accepts each limit itself", async () => {
    for (const over of [{ queue: "q".repeat(200) }, { id: "x".repeat(512) }, { id: "é".repeat(256) },
      { maxAttempts: 2n ** 63n - 1n }, { maxAttempts: Number.MAX_SAFE_INTEGER }, { maxAttempts: null }, { delay: 0 },
      { due: new Date("1960-01-01T00:00:00Z") }, { args: { s: "\ud800" } }, { args: { when: DUE, gone: undefined } }]) {
      const { result } = await c.enqueue(...call(over));
      assert.ok(result >= 0, show(over));
    }
    const raw = await redis.hgetall(`${prefix}:{cust-a}:msg`);
    assert.ok(Object.values(raw).some((e) => e.includes('"max_attempts":9223372036854775807,')), "max_attempts written exactly");
  });

  it("writes none of a batch with one bad job, and names the job", async () => {
    const before = await keysUnder(redis, prefix);
    const jobs = Array.from({ length: 5 }, (_, i) => ({ queue: "cust-b", task: "send", args: { i } }));
    jobs.splice(3, 0, { queue: "cust b", task: "send" });
    await assert.rejects(c.enqueueMany(jobs), (e) => e.field === "queue" && e.index === 3 && e.message.startsWith("jobs[3]: queue:"));
    jobs[3] = { queue: "cust-b", task: "send", args: { x: NaN } };
    await assert.rejects(c.enqueueMany(jobs), (e) => e.field === "args" && e.index === 3);
    assert.deepEqual(await keysUnder(redis, prefix), before);
  });

  it("refuses a bad queue name in status and revoke", async () => {
    await assert.rejects(c.status("cust a", "x"), (e) => e.field === "queue");
    await assert.rejects(c.revoke("cust/a", "x"), (e) => e.field === "queue");
  });

  it("refuses a schedule with a bad queue, writing nothing", async () => {
    const before = await keysUnder(redis, prefix);
    await assert.rejects(c.schedulePut("s", { queue: "a b", task: "t", schedule: { type: "interval", every: "1s" } }),
      (e) => e.field === "definition.queue");
    await assert.rejects(c.schedulePut("s", { queue: "a", schedule: { type: "interval", every: "1s" } }),
      (e) => e.field === "definition.task");
    assert.deepEqual(await keysUnder(redis, prefix), before);
  });
});

describe("the HTTP producer refuses the same inputs before sending", () => {
  // Port 9 (discard) is never asked: a refusal happens before any request.
  const h = new HTTPClient("http://127.0.0.1:9", "t");
  it("names the field", async () => {
    for (const [over, field] of BAD) {
      await assert.rejects(h.enqueue(...call(over)), (e) => e instanceof InvalidArgument && e.field === field, show(Object.keys(over)));
    }
  });
  it("names the job of a batch", async () => {
    await assert.rejects(h.enqueueMany("cust-a", [{ task: "send" }, { task: "send", maxAttempts: -1 }]),
      (e) => e.field === "maxAttempts" && e.index === 1);
  });
});

// The client forgets the queues it added to <prefix>:queues once unused
// (RecentSet): a name stays while used once a period and goes one to two
// periods after its last use; two periods without any call drop
// everything. No server needed.
describe("the registered queues", () => {
  it("are forgotten once unused for a period or two", async () => {
    const { RecentSet } = await import("../dist/client.js");
    let now = 0;
    const r = new RecentSet(60_000, () => now);
    r.add("used");
    r.add("unused");
    now = 60_000; // turn: both in the previous generation
    assert.equal(r.has("used"), true);
    now = 120_000; // turn: unused goes, used was copied forward
    assert.equal(r.has("used"), true);
    assert.equal(r.has("unused"), false);
    assert.equal(r.size, 1);
    now = 240_000; // nothing asked for two periods
    assert.equal(r.has("used"), false);
    assert.equal(r.size, 0);
  });
});
