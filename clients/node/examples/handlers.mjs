// A Node task program for a pooled route (or, without `pool`, one process
// per task): handlers are async functions of the envelope.
//
//   drover ctl queue create thumbnails --task 'resize=node /opt/app/handlers.mjs' --pool resize=max_tasks_per_child=1000
import { Retry, main } from "@drover-dev/drover/pool";

main({
  async resize(envelope, ctx) {
    const { path, width } = envelope.args;
    console.log("resizing", path, "to", width, "attempt", ctx.attempt); // the task's log
    if (!path) throw new Error("args.path is required"); // a failure: retried, then dead-lettered
    if (path.startsWith("pending/")) throw new Retry("not uploaded yet"); // a retry with backoff
    // ctx.signal aborts at the task's deadline: pass it to fetch and friends.
  },
});
