// Enqueue a message and follow it until it ends:
//
//   REDIS_URL=redis://127.0.0.1:6379/0 node examples/enqueue.mjs QUEUE TASK [ARGS-JSON]
//
// (DROVER_PREFIX: the fleet's redis.prefix, default "drover".) Prints the
// id, then each state the job passes through, and exits 0 once it
// succeeded.
import { Client } from "../dist/index.js";

const [queue, task, args] = process.argv.slice(2);
if (!queue || !task) {
  console.error("usage: node examples/enqueue.mjs QUEUE TASK [ARGS-JSON]");
  process.exit(2);
}
const c = await Client.connect({ url: process.env.REDIS_URL, prefix: process.env.DROVER_PREFIX ?? "drover" });
try {
  const { id } = await c.enqueue(queue, task, args ? JSON.parse(args) : undefined, { headers: { from: "examples/enqueue.mjs" } });
  console.log("enqueued", id);
  let last = "";
  for (;;) {
    const st = await c.status(queue, id);
    if (st.state !== last) console.log(st.state);
    last = st.state;
    if (["succeeded", "failed", "dead", "revoked"].includes(st.state)) process.exitCode = st.state === "succeeded" ? 0 : 1;
    if (process.exitCode !== undefined) break;
    await new Promise((r) => setTimeout(r, 100));
  }
} finally {
  await c.close();
}
