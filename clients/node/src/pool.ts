/**
 * Serve async Node functions as Drover task handlers (docs/process-pool.md):
 * warm pooled children (`pool { … }` on a route) or one process per task.
 *
 *     import { main, Retry } from "@drover-dev/drover/pool";
 *
 *     main({
 *       async resize(envelope, ctx) {
 *         console.log("resizing", envelope.args.path);   // the task's log
 *         if (!ready()) throw new Retry("not uploaded yet");
 *       },
 *     });
 *
 * main() serves the pool protocol when the worker started the program as
 * a pooled child (DROVER_POOL_PROTOCOL=1) and runs one task from stdin
 * otherwise. A handler gets the envelope and a TaskContext. Resolving is
 * success, throwing Retry asks for a retry, throwing anything else is a
 * failure (its stack goes to stderr), and throwing after ctx.signal
 * aborted at the deadline is a timeout. The key "*" serves any task
 * without a handler of its own.
 */
import { writeSync } from "node:fs";
import { Socket } from "node:net";

export const PROTOCOL = 1;
export const TASK_FD = 3;
export const RESULT_FD = 4;
/** The largest frame the worker accepts from a child. */
export const MAX_RESULT_FRAME = 16 << 20;
/** Exit codes of per-task mode (DESIGN.md §6). */
export const EXIT_RETRY = 75;
export const EXIT_TIMEOUT = 124;

/** Thrown by a handler: try the task again later (exit 75 per task). */
export class Retry extends Error {
  constructor(message = "retry requested") {
    super(message);
    this.name = "Retry";
  }
}

/** The envelope of a message (docs/redis-schema.md): unknown fields are kept. */
export interface Envelope {
  id: string;
  queue: string;
  task: string;
  args?: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  attempt: number;
  max_attempts?: number;
  enqueued_at?: string;
  headers?: Record<string, string>;
  [field: string]: unknown;
}

/** The task frame's fields: what per-task mode puts in DROVER_*. */
export interface TaskContext {
  seq: number;
  queue: string;
  task: string;
  id: string;
  attempt: number;
  position: number;
  /** The task's time limit, or null when it has none. */
  deadline: Date | null;
  /** Aborts at the deadline (reason: a TimeoutError DOMException). */
  signal: AbortSignal;
  /** The task span's W3C trace context, or "". */
  traceparent: string;
  tracestate: string;
}

export type Handler = (envelope: Envelope, ctx: TaskContext) => unknown;
export type Handlers = Record<string, Handler>;

type Outcome = "success" | "retry" | "failure" | "timeout";

/** Runs the handler for one task and says how it ended. */
export async function runOne(handlers: Handlers, envelope: Envelope, fields: Omit<TaskContext, "signal">): Promise<{ outcome: Outcome; message?: string }> {
  const handler = handlers[fields.task] ?? handlers["*"];
  if (!handler) return { outcome: "failure", message: `no Node handler for task ${JSON.stringify(fields.task)}` };
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  if (fields.deadline) {
    const ms = Math.max(0, fields.deadline.getTime() - Date.now());
    // Not unref'd: a handler waiting only on its signal must see it abort.
    timer = setTimeout(() => ac.abort(new DOMException("the task's deadline passed", "TimeoutError")), ms);
  }
  try {
    await handler(envelope, { ...fields, signal: ac.signal });
    return { outcome: "success" };
  } catch (e) {
    if (e instanceof Retry) return { outcome: "retry", message: e.message };
    if (ac.signal.aborted) return { outcome: "timeout", message: `gave up: ${describe(e)}` };
    process.stderr.write((e instanceof Error && e.stack ? e.stack : describe(e)) + "\n");
    return { outcome: "failure", message: describe(e) };
  } finally {
    clearTimeout(timer);
  }
}

function describe(e: unknown): string {
  if (e instanceof Error) return e.message ? `${e.name}: ${e.message}` : e.name;
  return String(e);
}

function writeAll(fd: number, buf: Buffer): void {
  let off = 0;
  while (off < buf.length) {
    try {
      off += writeSync(fd, buf, off);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EAGAIN") throw e;
    }
  }
}

/** Writes one frame: a 4-byte big-endian length, then the JSON. */
export function writeFrame(fd: number, obj: unknown): void {
  const body = Buffer.from(JSON.stringify(obj), "utf8");
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length);
  writeAll(fd, Buffer.concat([head, body]));
}

/** Output written during a task belongs to it: wait until what it wrote is handed to the OS. */
function flushed(s: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => (s.writableLength === 0 ? resolve() : s.write("", () => resolve())));
}

/** Reads frames from a stream: yields each frame's object; returns at end of file. */
export async function* readFrames(stream: AsyncIterable<Buffer>): AsyncGenerator<Record<string, unknown>> {
  let buf: Buffer = Buffer.alloc(0);
  for await (const chunk of stream) {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    while (buf.length >= 4) {
      const n = buf.readUInt32BE(0);
      if (buf.length < 4 + n) break;
      yield JSON.parse(buf.subarray(4, 4 + n).toString("utf8"));
      buf = buf.subarray(4 + n);
    }
  }
  if (buf.length) throw new Error(`drover pool: frame cut short: ${buf.length} bytes at end of file`);
}

/**
 * Serves tasks until the worker closes the task descriptor, then exits 0.
 * Must run in a process the worker started as a pooled child.
 */
export async function serve(handlers: Handlers, opts: { taskFd?: number; resultFd?: number } = {}): Promise<never> {
  const taskFd = opts.taskFd ?? TASK_FD;
  const resultFd = opts.resultFd ?? RESULT_FD;
  const version = process.env.DROVER_POOL_PROTOCOL;
  if (version !== String(PROTOCOL)) {
    process.stderr.write(`drover pool: DROVER_POOL_PROTOCOL=${JSON.stringify(version ?? null)}: not started as a pooled child ` +
      `(protocol ${PROTOCOL}) of a Drover worker\n`);
    process.exit(126);
  }
  writeFrame(resultFd, { type: "ready", protocol: PROTOCOL });
  // A socket, not fs.createReadStream: a blocking read in the thread pool
  // would keep a handler's process.exit() from ending the process.
  const tasks = new Socket({ fd: taskFd, readable: true, writable: false });
  for await (const frame of readFrames(tasks)) {
    if (frame.type !== "task") throw new Error(`drover pool: want a task frame, have ${JSON.stringify(frame.type)}`);
    const fields = contextOf(frame);
    const res = await runOne(handlers, frame.envelope as Envelope, fields);
    await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
    writeFrame(resultFd, { type: "result", seq: fields.seq, ...res });
  }
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(0);
}

function contextOf(f: Record<string, unknown>): Omit<TaskContext, "signal"> {
  const s = (v: unknown) => (typeof v === "string" ? v : "");
  const n = (v: unknown) => (typeof v === "number" ? v : 0);
  return {
    seq: n(f.seq), queue: s(f.queue), task: s(f.task), id: s(f.id), attempt: n(f.attempt), position: n(f.position),
    deadline: typeof f.deadline === "string" && f.deadline ? new Date(f.deadline) : null,
    traceparent: s(f.traceparent), tracestate: s(f.tracestate),
  };
}

/**
 * Per-task mode: reads the envelope from stdin, runs its handler and exits
 * 0 (success), 75 (retry), 124 (gave up at the deadline) or 1 (failure,
 * the reason on stderr), as DESIGN.md §6 maps exit codes.
 */
export async function runTask(handlers: Handlers): Promise<never> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const envelope = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Envelope;
  const env = process.env;
  // A handler whose promise can never settle (nothing left to wake it)
  // would otherwise let the process exit 0: a success that never ran.
  const unsettled = () => {
    process.stderr.write("drover task: failure: the handler's promise never settled\n");
    process.exit(1);
  };
  process.once("beforeExit", unsettled);
  const res = await runOne(handlers, envelope, {
    seq: 1, queue: env.DROVER_QUEUE ?? envelope.queue, task: env.DROVER_TASK ?? envelope.task,
    id: env.DROVER_MESSAGE_ID ?? envelope.id, attempt: Number(env.DROVER_ATTEMPT ?? envelope.attempt ?? 0),
    position: Number(env.DROVER_POSITION ?? 0), deadline: env.DROVER_DEADLINE ? new Date(env.DROVER_DEADLINE) : null,
    traceparent: env.TRACEPARENT ?? "", tracestate: env.TRACESTATE ?? "",
  });
  process.off("beforeExit", unsettled);
  if (res.outcome !== "success" && res.message) process.stderr.write(`drover task: ${res.outcome}: ${res.message}\n`);
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit({ success: 0, retry: EXIT_RETRY, timeout: EXIT_TIMEOUT, failure: 1 }[res.outcome]);
}

/** serve() under a worker's pool (DROVER_POOL_PROTOCOL set), runTask() otherwise. */
export function main(handlers: Handlers): Promise<never> {
  return process.env.DROVER_POOL_PROTOCOL ? serve(handlers) : runTask(handlers);
}
