// The pooled child the fleet suite's queues run (test/fleet.test.js): each
// task appends "<queue> <id> <args.seq>" to $DONE_FILE; task "fail" fails,
// task "later" asks for a retry.
import { appendFileSync } from "node:fs";
import { Retry, main } from "../dist/pool.js";

const done = process.env.DONE_FILE;

main({
  record(envelope, ctx) {
    appendFileSync(done, `${ctx.queue} ${ctx.id} ${envelope.args?.seq ?? "-"}\n`);
  },
  fail() {
    throw new Error("this task always fails");
  },
  later() {
    throw new Retry("not yet");
  },
});
