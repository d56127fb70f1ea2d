// A program for the pool's tests (test/pool.test.js and the Go executor's
// worker/executor tests): one handler per case, served by main() — pooled
// under DROVER_POOL_PROTOCOL=1, one task from stdin otherwise.
import { writeSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Retry, main } from "../dist/pool.js";

main({
  echo(envelope, ctx) {
    console.log("hello", envelope.args?.to, "attempt", ctx.attempt, "queue", ctx.queue);
    console.error("to stderr");
  },
  async later() {
    await sleep(5);
    throw new Retry("not uploaded yet");
  },
  fail() {
    throw new RangeError("width must be > 0");
  },
  garbage() {
    writeSync(4, "not a frame at all");
  },
  crash() {
    process.stderr.write("segfault imminent\n");
    process.exit(7);
  },
  hang: () => new Promise(() => setInterval(() => {}, 1000)),
  async patient(envelope, ctx) {
    // Gives up when the deadline passes: a timeout, not a failure.
    await new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
  },
  pid() {
    console.log(process.pid);
  },
});
