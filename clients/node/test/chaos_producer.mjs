// The chaos harness's Node producer (tools/chaos/foreign.go): it enqueues
// the batches the harness writes on stdin, one JSON line each, through this
// client's enqueueMany, and answers each on stdout with one line: the
// result per message, or the error. The harness sends a batch again after
// an error (the same ids), so a message is confirmed only when Redis was.
//
//   in:  {"msgs": [{"queue": "q01", "task": "work", "args": {...}, "id": "m-0000007"}, ...]}
//        (no "id": the client generates one)
//   out: {"results": [{"id": "m-0000007", "result": 1733150000000123}, ...]}
//        or {"error": "..."}
//
// Redis: CHAOS_REDIS_URL, or CHAOS_SENTINELS ("host:port,host:port") with
// CHAOS_SENTINEL_MASTER; CHAOS_PREFIX the fleet's prefix; CHAOS_DURABLE
// "<replicas>:<timeout ms>" turns the durable mode on.
import { createInterface } from "node:readline";
import Redis from "ioredis";
import { Client } from "../dist/index.js";

function redis() {
  const sentinels = process.env.CHAOS_SENTINELS;
  // A call waits for the connection only until a connection attempt
  // fails, and one in flight when the connection drops is not sent again
  // on the next: the call fails, and the harness decides what to send again.
  const common = { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 };
  if (sentinels) {
    return new Redis({
      ...common,
      sentinels: sentinels.split(",").map((a) => {
        const i = a.lastIndexOf(":");
        return { host: a.slice(0, i), port: Number(a.slice(i + 1)) };
      }),
      name: process.env.CHAOS_SENTINEL_MASTER,
    });
  }
  return new Redis(process.env.CHAOS_REDIS_URL, common);
}

function durable() {
  const d = process.env.CHAOS_DURABLE;
  if (!d) return undefined;
  const [replicas, timeoutMs] = d.split(":").map(Number);
  return { replicas, timeoutMs };
}

const r = redis();
r.on("error", () => {}); // each call reports its own failure
const client = new Client({ redis: r, prefix: process.env.CHAOS_PREFIX, durable: durable() });

function answer(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (!line) continue;
  try {
    const { msgs } = JSON.parse(line);
    const res = await client.enqueueMany(msgs.map((m) => ({ queue: m.queue, task: m.task, args: m.args, ...(m.id ? { id: m.id } : {}) })));
    answer({ results: res.map((e) => ({ id: e.id, result: e.result })) });
  } catch (e) {
    answer({ error: String(e?.message ?? e) });
  }
}
r.disconnect();
