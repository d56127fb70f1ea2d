// The Node client against BullMQ on the same Redis (tools/benchreport,
// "Node client against BullMQ"; e2e.BenchmarkNodeVsBullMQ runs it). Each
// call measures one thing inside this process (start-up, connecting and a
// worker's first BENCH_WARM jobs excluded) and prints one JSON line: n,
// elapsed_s, cpu_s (this process, user + system) and redis_cpu_s (the
// Redis server's, INFO cpu).
//
//     node bench.mjs enqueue drover|bullmq CALLERS N
//     node bench.mjs bullmq-worker CONCURRENCY N
//
// Environment: REDIS_URL, BENCH_QUEUE (a fresh queue name), BENCH_WARM (a
// worker's jobs before its clock starts; 1000), DROVER_PREFIX
// (Drover's redis.prefix), BULLMQ_PREFIX (BullMQ's key prefix; its default
// is "bull"), DROVER_DIST (the built client's dist directory).
//
// Both systems run with their default settings on one ioredis version
// (package.json): Drover's Client.enqueue against BullMQ's Queue.add with
// the same payload, and BullMQ's Worker with an async no-op processor.
// CALLERS concurrent callers are async loops sharing the one client, as
// the callers of a Node service share it.
import { Redis } from "ioredis";
import { Queue, Worker } from "bullmq";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} not set: run through go test ./e2e -bench NodeVsBullMQ (or make bench)`);
  return v;
}

const payload = { user: 42, text: "hello" };

/** The Redis server's CPU seconds so far (user + system, all its threads). */
async function redisCPU(redis) {
  const info = await redis.info("cpu");
  const field = (k) => Number(new RegExp(`^${k}:([0-9.]+)`, "m").exec(info)[1]);
  return field("used_cpu_user") + field("used_cpu_sys");
}

/** Starts a window; its stop() resolves to the JSON figures of n calls. */
async function window(redis, n) {
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  const r0 = await redisCPU(redis);
  return async () => {
    const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
    const c = process.cpuUsage(c0);
    const r1 = await redisCPU(redis);
    return { n, elapsed_s: elapsed, cpu_s: (c.user + c.system) / 1e6, redis_cpu_s: r1 - r0 };
  };
}

/** CALLERS async loops sharing `one`, N calls in all. */
async function callers(count, n, one) {
  let next = 0;
  await Promise.all(Array.from({ length: count }, async () => {
    while (next < n) {
      next++;
      await one();
    }
  }));
}

async function enqueue(system, count, n) {
  const redis = new Redis(env("REDIS_URL"));
  const queue = env("BENCH_QUEUE");
  let one, close;
  if (system === "drover") {
    const { Client } = await import(pathToFileURL(join(env("DROVER_DIST"), "index.js")).href);
    const c = await Client.connect({ redis, prefix: env("DROVER_PREFIX") });
    one = () => c.enqueue(queue, "send", payload);
    close = () => c.close();
  } else if (system === "bullmq") {
    const q = new Queue(queue, { connection: redis, prefix: env("BULLMQ_PREFIX") });
    await q.waitUntilReady();
    one = () => q.add("send", payload);
    close = () => q.close();
  } else {
    throw new Error(`unknown system ${system}: want drover or bullmq`);
  }
  await one(); // loads the scripts
  const stop = await window(redis, n);
  await callers(count, n, one);
  const out = await stop();
  await close();
  redis.disconnect();
  return out;
}

/**
 * Adds WARM + n jobs, then times a Worker with an async no-op processor
 * from its WARM-th completed job (connected, its code compiled: the steady
 * state, as the Drover side's warm children) until it has completed them all.
 */
const WARM = Number(process.env.BENCH_WARM ?? 1000);
async function bullmqWorker(concurrency, n) {
  const url = new URL(env("REDIS_URL"));
  const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
  const name = env("BENCH_QUEUE");
  const prefix = env("BULLMQ_PREFIX");
  const redis = new Redis(env("REDIS_URL"));
  const q = new Queue(name, { connection: redis, prefix });
  for (let i = 0; i < WARM + n; i += 1000) {
    await q.addBulk(Array.from({ length: Math.min(1000, WARM + n - i) }, () => ({ name: "noop", data: payload })));
  }
  let worker, stop;
  await new Promise((resolve, reject) => {
    let done = 0;
    if (WARM === 0) stop = window(redis, n);
    worker = new Worker(name, async () => {}, { connection, prefix, concurrency });
    worker.on("completed", () => {
      done++;
      if (done === WARM) stop = window(redis, n);
      if (done === WARM + n) resolve();
    });
    worker.on("failed", (job, err) => reject(new Error(`job ${job?.id} failed: ${err}`)));
    worker.on("error", reject);
  });
  const out = await (await stop)();
  await worker.close();
  await q.close();
  redis.disconnect();
  return out;
}

const [cmd, a, b, c] = process.argv.slice(2);
let out;
if (cmd === "enqueue") out = await enqueue(a, Number(b), Number(c));
else if (cmd === "bullmq-worker") out = await bullmqWorker(Number(a), Number(b));
else throw new Error(`usage: bench.mjs enqueue drover|bullmq CALLERS N | bullmq-worker CONCURRENCY N; have ${process.argv.slice(2)}`);
console.log(JSON.stringify(out));
