/**
 * The Redis producer: enqueue, revoke, job status and schedules, with the
 * Lua scripts the Go code runs (generated from queue/scripts.go). It
 * mirrors the Python client (python/drover/client.py) call for call on the
 * layout of docs/redis-schema.md.
 */
import { Redis } from "ioredis";
import { hostname, userInfo } from "node:os";
import { DroverError, InvalidArgument, LayoutError, OutcomeUnknown } from "./errors.js";
import { newId } from "./ids.js";
import { LuaScript, runPipeline, type Call } from "./scripts.js";
import { loneResults, loneScriptCall, planLone } from "./enqueue_lone.js";
import { RedisClock, clockArg } from "./redis_clock.js";
import { LAYOUT_VERSION } from "./generated.js";
import { attempts, checkJob, checkQueue, encodeArgs } from "./validate.js";
import type { Durable, EnqueueOptions, Enqueued, Job, JobStatus, Schedule, ScheduleDefinition } from "./types.js";

export const DEFAULT_DEDUPE_WINDOW_MS = 24 * 3600 * 1000;
export const DEFAULT_OUTCOME_RETENTION_MS = 24 * 3600 * 1000;
export const DEFAULT_OUTCOME_MAX = 10000;
/** Messages per script call. */
export const MAX_SCRIPT_BATCH = 1000;

/** How long (ms) a queue stays in Client's registered set unused: one to two of these. */
export const KNOWN_FOR_MS = 10 * 60 * 1000;

/**
 * A set that forgets what was not used for a while: a name stays while it is
 * added or found at least once a period, and goes one to two periods after
 * its last use (two generations; both go when nothing was asked for two
 * periods). The client remembers so the queues it added to <prefix>:queues:
 * a per-key fleet's keys come and go, and a set of every queue ever sent to
 * grew for as long as the client ran. A forgotten queue's next enqueue sends
 * the SADD again. The Go producer's is queue/recent.go.
 */
export class RecentSet {
  private cur = new Set<string>();
  private old = new Set<string>();
  private turnAt: number;

  constructor(private readonly periodMs: number, private readonly now: () => number = Date.now) {
    this.turnAt = now() + periodMs;
  }

  private turn(): void {
    const now = this.now();
    if (now < this.turnAt) return;
    this.old = now >= this.turnAt + this.periodMs ? new Set() : this.cur;
    this.cur = new Set();
    this.turnAt = now + this.periodMs;
  }

  has(name: string): boolean {
    this.turn();
    if (this.cur.has(name)) return true;
    if (!this.old.has(name)) return false;
    this.cur.add(name);
    return true;
  }

  add(name: string): void {
    this.turn();
    this.cur.add(name);
  }

  /** The names held (those of both generations, counted once). */
  get size(): number {
    let n = this.cur.size;
    for (const name of this.old) if (!this.cur.has(name)) n++;
    return n;
  }
}

const enqueueScript = new LuaScript("enqueue.lua");
const revokeScript = new LuaScript("revoke.lua");
const recordScript = new LuaScript("record_outcomes.lua");
const statusScript = new LuaScript("job_status.lua");

export interface ClientOptions {
  /** An ioredis client to use (the caller keeps owning it), or... */
  redis?: Redis;
  /** ...a Redis URL to connect to (close() disconnects). Default redis://127.0.0.1:6379/0. */
  url?: string;
  /** The fleet's redis.prefix. Default "drover". */
  prefix?: string;
  /** How long a caller's id is remembered after its message ran. Default 24 h. */
  dedupeWindowMs?: number;
  /** Wake the fleet for a queue that has no owner yet (a family's first enqueue). Default true. */
  wakeups?: boolean;
  /** Refuse a Redis whose <prefix>:layout names another version. Default true. */
  checkLayout?: boolean;
  /**
   * The durable enqueue mode, as the fleet's redis.durable is for the Go
   * producers: an enqueue resolves only once the replicas confirm its
   * write, and rejects with OutcomeUnknown (naming every id of the call)
   * when they do not within the bound. Default: off (an enqueue is
   * acknowledged once the master applied it).
   */
  durable?: Durable;
}

/** The W3C trace context of @opentelemetry/api, when the package can be imported. */
type Inject = (carrier: Record<string, string>) => void;
let otelInject: Promise<Inject | null> | undefined;
function traceInjector(): Promise<Inject | null> {
  otelInject ??= (async () => {
    const name = "@opentelemetry/api";
    try {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const api: any = await import(name);
      return (c: Record<string, string>) => api.propagation.inject(api.context.active(), c);
    } catch {
      return null;
    }
  })();
  return otelInject;
}

/** One checked job, ready to send. */
interface Pending {
  index: number;
  queue: string;
  id: string;
  env: string;
  dueMs: number; // 0: now
  keyed: boolean; // a caller's id
}

/** One script call of an enqueue and how to read its reply: one result per message of chunk, in order. */
interface PlannedCall {
  call: Call;
  chunk: Pending[];
  results: (reply: unknown) => number[];
}

/**
 * A Drover producer on Redis.
 *
 *     const c = await Client.connect({ url: "redis://127.0.0.1:6379/0" });
 *     const { id, result } = await c.enqueue("emails", "send", { to: "a@example.com" });
 *
 * connect() refuses (LayoutError) a Redis whose <prefix>:layout key names
 * a version this client does not speak.
 */
export class Client {
  readonly redis: Redis;
  readonly prefix: string;
  readonly dedupeWindowMs: number;
  private readonly wakeChannel: string;
  private readonly owned: boolean;
  private readonly registered = new RecentSet(KNOWN_FOR_MS); // queues added to <prefix>:queues lately
  private inject: Inject | null = null;
  /** The durable mode, checked; null when off. */
  readonly durable: Required<Durable> | null;
  private waitaofChecked = false;
  private readonly clock = new RedisClock(); // the lone scripts' estimate of Redis's clock

  /** A client on r; prefer connect(), which also checks the layout version. */
  constructor(opts: ClientOptions = {}) {
    this.owned = !opts.redis;
    this.redis = opts.redis ?? new Redis(opts.url ?? "redis://127.0.0.1:6379/0");
    this.prefix = opts.prefix ?? "drover";
    this.dedupeWindowMs = Math.trunc(opts.dedupeWindowMs ?? DEFAULT_DEDUPE_WINDOW_MS);
    this.wakeChannel = opts.wakeups === false ? "" : this.prefix + ":wakeup-unowned";
    this.durable = checkDurable(opts.durable);
  }

  /** A client, after checking the layout version (unless checkLayout is false). */
  static async connect(opts: ClientOptions = {}): Promise<Client> {
    const c = new Client(opts);
    try {
      if (opts.checkLayout !== false) await c.checkLayout();
      c.inject = await traceInjector();
    } catch (e) {
      await c.close();
      throw e;
    }
    return c;
  }

  /** Disconnects a connection the client opened (from a URL); leaves a given one alone. */
  async close(): Promise<void> {
    if (this.owned) this.redis.disconnect();
  }

  /** Throws LayoutError when <prefix>:layout names another version; an absent key is accepted. */
  async checkLayout(): Promise<void> {
    const v = await this.redis.get(this.prefix + ":layout");
    if (v !== null && Number(v) !== LAYOUT_VERSION) {
      throw new LayoutError(`Redis ${JSON.stringify(this.prefix)} holds Drover layout v${v}; this client speaks ` +
        `v${LAYOUT_VERSION}: upgrade the client (docs/redis-schema.md, Compatibility)`);
    }
  }

  /** The keys of one queue (docs/redis-schema.md), after checking its name. */
  keys(queue: string): Record<"log" | "msg" | "seq" | "delayed" | "seen" | "owner" | "dead" | "deadmsg" | "done" | "attempts", string> {
    checkQueue(queue);
    const base = `${this.prefix}:{${queue}}:`;
    return {
      log: base + "log", msg: base + "msg", seq: base + "seq", delayed: base + "delayed", seen: base + "seen",
      owner: base + "owner", dead: base + "dead", deadmsg: base + "deadmsg", done: base + "done", attempts: base + "attempts",
    };
  }

  // --- enqueue -------------------------------------------------------------

  /**
   * Enqueues one message. Resolves to its id and result: the position
   * (> 0), 0 when delayed, -1 when the id was already known. Rejects with
   * InvalidArgument, writing nothing, for a message the Go producers refuse.
   */
  async enqueue(queue: string, task: string, args?: unknown, opts: EnqueueOptions = {}): Promise<Enqueued> {
    if (opts === null || typeof opts !== "object") throw new InvalidArgument("options", `want an object, have ${opts}`);
    try {
      const [one] = await this.enqueueMany([{ ...opts, queue, task, args }]);
      return one!;
    } catch (e) {
      // One job: no index in the message.
      if (e instanceof InvalidArgument && e.index !== undefined) throw new InvalidArgument(e.field, e.problem);
      throw e;
    }
  }

  /**
   * Enqueues jobs (any queues) in one pipeline. Resolves to one Enqueued
   * per job, in order. Every job is checked before anything is written:
   * one refused job (InvalidArgument, with its index) writes none.
   * Messages of one queue get positions in the order given.
   *
   * When every job has a generated id and is due now, the call goes
   * through the lone scripts as the Go producer's does (enqueue_lone.ts:
   * one script call for the queues with one message each, up to 256, one
   * per queue with several, with this client's estimate of Redis's clock);
   * otherwise through the general script, one call per queue and up to
   * 1000 messages. One call's jobs never go both ways.
   */
  async enqueueMany(jobs: Iterable<Job>): Promise<Enqueued[]> {
    const list = [...jobs];
    const pending: Pending[] = [];
    const now = new Date().toISOString();
    const nowMs = Date.now();
    list.forEach((j, i) => {
      if (j === null || typeof j !== "object") throw new InvalidArgument("job", `want a Job object, have ${j}`, i);
      checkJob(j, i);
      const keyed = j.id !== undefined;
      const id = keyed ? j.id! : newId();
      const argsJSON = encodeArgs(j.args, i);
      const ma = attempts(j.maxAttempts, i);
      const headers: Record<string, string> = { ...(j.headers ?? {}) };
      if (this.inject) {
        const carrier: Record<string, string> = {};
        this.inject(carrier);
        for (const k of ["traceparent", "tracestate"]) if (carrier[k] && !(k in headers)) headers[k] = carrier[k]!;
      }
      // The envelope in the Go and Python field order.
      let env = `{"id":${JSON.stringify(id)},"queue":${JSON.stringify(j.queue)},"task":${JSON.stringify(j.task)}`;
      if (argsJSON !== undefined) env += `,"args":${argsJSON}`;
      env += `,"attempt":0`;
      if (ma) env += `,"max_attempts":${ma}`;
      env += `,"enqueued_at":${JSON.stringify(now)}`;
      if (Object.keys(headers).length) env += `,"headers":${JSON.stringify(headers)}`;
      env += "}";
      let dueMs = 0;
      if (j.due !== undefined) dueMs = Math.max(Math.floor(j.due.getTime()), 1); // as Go's dueMillis: before 1970 is 1
      else if (j.delay) dueMs = Math.floor(nowMs + j.delay * 1000);
      pending.push({ index: i, queue: j.queue, id, env, dueMs, keyed });
    });
    const lone = pending.length > 0 && pending.every((p) => !p.keyed && p.dueMs === 0);
    const queues = new Set(pending.map((p) => p.queue));
    const register = [...queues].filter((q) => !this.registered.has(q));
    if (this.durable) await this.checkWaitAOF();
    const planned = lone ? await this.loneCalls(pending) : this.generalCalls(pending);
    const calls = planned.map((c) => c.call);
    let results: unknown[];
    if (calls.length === 1 && register.length === 0 && !this.durable) {
      // The common case of a lone caller: one EVALSHA, no pipeline.
      results = [await calls[0]!.script!.run(this.redis, calls[0]!.keys, calls[0]!.args)];
    } else {
      if (register.length) {
        const key = this.prefix + ":queues";
        calls.push({ keys: [], args: [], other: (p) => p.sadd(key, ...register) });
      }
      results = await runPipeline(this.redis, calls, this.durable ? this.confirmation() : []);
      for (const q of register) this.registered.add(q);
      if (this.durable) {
        const why = this.unconfirmed(results[results.length - 1]);
        if (why) throw new OutcomeUnknown(pending.map((p) => p.id), why);
      }
    }
    const out: Enqueued[] = new Array(list.length);
    planned.forEach((c, k) => {
      const res = c.results(results[k]);
      c.chunk.forEach((p, m) => { out[p.index] = { id: p.id, result: res[m]! }; });
    });
    return out;
  }

  /** The general script's calls: per queue, up to MAX_SCRIPT_BATCH messages a call, in order. */
  private generalCalls(pending: Pending[]): PlannedCall[] {
    const byQueue = new Map<string, Pending[]>();
    for (const p of pending) {
      const q = byQueue.get(p.queue);
      if (q) q.push(p);
      else byQueue.set(p.queue, [p]);
    }
    const planned: PlannedCall[] = [];
    for (const [queue, items] of byQueue) {
      const k = this.keys(queue);
      const keys = [k.log, k.msg, k.seq, k.delayed, k.seen, k.owner];
      for (let s = 0; s < items.length; s += MAX_SCRIPT_BATCH) {
        const chunk = items.slice(s, s + MAX_SCRIPT_BATCH);
        const args: string[] = [String(this.dedupeWindowMs), this.wakeChannel, queue];
        for (const p of chunk) args.push(p.id, p.env, String(p.dueMs), p.keyed ? "1" : "0");
        planned.push({ call: { script: enqueueScript, keys, args }, chunk, results: (r) => (r as unknown[]).map(Number) });
      }
    }
    return planned;
  }

  /**
   * The lone scripts' calls for messages with generated ids due now
   * (planLone), with one estimate of Redis's clock for them all (a TIME
   * round trip of its own at most every 5 s).
   */
  private async loneCalls(pending: Pending[]): Promise<PlannedCall[]> {
    const clock = clockArg(await this.clock.now(this.redis));
    const keys = (queue: string): [string, string, string, string] => {
      const k = this.keys(queue);
      return [k.log, k.msg, k.seq, k.owner];
    };
    return planLone(pending, MAX_SCRIPT_BATCH).map((c) => ({
      call: loneScriptCall(c, keys, this.wakeChannel, clock),
      chunk: c.msgs,
      results: (r) => loneResults(c, r),
    }));
  }

  // --- durable mode (queue/durable.go) -----------------------------------

  /** With aof, refuses (before anything is written) a server without WAITAOF (before Redis 7.2). */
  private async checkWaitAOF(): Promise<void> {
    if (!this.durable!.aof || this.waitaofChecked) return;
    const info = await this.redis.info("server");
    const version = /redis_version:([0-9.]+)/.exec(info)?.[1] ?? "0";
    const [major = 0, minor = 0] = version.split(".").map(Number);
    if (major < 7 || (major === 7 && minor < 2)) {
      throw new DroverError(`durable aof needs WAITAOF (Redis 7.2 or later) and this server does not have it ` +
        `(version ${version}): upgrade, or use durable { aof: false }; nothing was enqueued`);
    }
    this.waitaofChecked = true;
  }

  /**
   * The end of an enqueue pipeline in the durable mode, as the Go producer
   * sends it: a barrier PUBLISH (replicated like a write, so that WAIT
   * covers a duplicate's earlier write too), then WAIT or WAITAOF, on the
   * connection that wrote.
   */
  private confirmation(): Call[] {
    const d = this.durable!;
    const barrier = this.prefix + ":durable-barrier";
    const wait = d.aof ? ["WAITAOF", 1, d.replicas, d.timeoutMs] : ["WAIT", d.replicas, d.timeoutMs];
    return [
      { keys: [], args: [], other: (p) => p.publish(barrier, "") },
      { keys: [], args: [], other: (p) => p.call(String(wait[0]), ...wait.slice(1)) },
    ];
  }

  /** Why the confirmation's reply does not confirm ("" when it does). */
  private unconfirmed(reply: unknown): string {
    const d = this.durable!;
    if (d.aof) {
      const [local, replicas] = (reply as number[]).map(Number);
      if (!(local! >= 1)) return `not in the master's append-only file within ${d.timeoutMs}ms (is appendonly on?)`;
      if (!(replicas! >= d.replicas)) return `in the append-only file of ${replicas} of ${d.replicas} replicas within ${d.timeoutMs}ms`;
      return "";
    }
    const n = Number(reply);
    return n >= d.replicas ? "" : `confirmed by ${n} of ${d.replicas} replicas within ${d.timeoutMs}ms`;
  }

  // --- revoke --------------------------------------------------------------

  /**
   * Deletes a delayed message and records the outcome `revoked` (with by,
   * who revoked it), as an HTTP revoke does. Resolves false, changing
   * nothing, when the id is not delayed (unknown or already promoted). by
   * defaults to user@host, as `drover ctl revoke` records it.
   */
  async revoke(queue: string, id: string, opts: { by?: string; retentionMs?: number; maxRecords?: number } = {}): Promise<boolean> {
    const by = opts.by ?? operator();
    const retention = opts.retentionMs ?? DEFAULT_OUTCOME_RETENTION_MS;
    const k = this.keys(queue);
    if (typeof id !== "string" || id === "") throw new InvalidArgument("id", "want a non-empty string");
    const ok = await revokeScript.run(this.redis, [k.log, k.msg, k.delayed, k.seen, k.attempts], [id]);
    if (!ok) return false;
    const rec: Record<string, unknown> = { state: "revoked", exit_code: -1, finished_at: new Date().toISOString() };
    if (by) rec.by = by;
    if (retention > 0) {
      await recordScript.run(this.redis, [k.done], [opts.maxRecords ?? DEFAULT_OUTCOME_MAX, retention, id, JSON.stringify(rec)]);
    }
    return true;
  }

  // --- status --------------------------------------------------------------

  /**
   * Where the job is now: the states and fields of `drover ctl job`,
   * except `running` (which only ZooKeeper knows). Without the committed
   * offset (ZooKeeper's), a message still in the log is `pending` until
   * its outcome record says otherwise.
   */
  async status(queue: string, id: string): Promise<JobStatus> {
    const k = this.keys(queue);
    if (typeof id !== "string" || id === "") throw new InvalidArgument("id", "want a non-empty string");
    const r = (await statusScript.run(this.redis, [k.log, k.msg, k.delayed, k.dead, k.deadmsg, k.done], [id, 0])) as unknown[];
    const [nowUs, due, pos, ahead, env, dead, deadrec, rec] = [...r, ...new Array(8).fill(null)] as (string | number | null)[];
    const st: JobStatus = {
      queue, id, state: "unknown", task: "", attempt: 0, position: 0, error: "", stderrTail: "", stdoutTail: "",
      member: "", by: "", asOf: new Date(Number(nowUs) / 1000).toISOString(),
    };
    const m = obj(env);
    if (m) { st.task = str(m.task); st.attempt = num(m.attempt); }
    const recd = obj(rec);
    const recordIsNewer = recd !== null && pos !== null && parseTimeUs(str(recd.finished_at)) > Math.trunc(Number(pos));
    if (due !== null) {
      st.state = "delayed";
      st.dueAt = new Date(Number(due)).toISOString();
      if (m && num(m.attempt) > 0) { st.state = "retrying"; lastError(st, m); }
    } else if (pos !== null && recordIsNewer) {
      st.position = Math.trunc(Number(pos));
      fromRecord(st, recd!);
    } else if (pos !== null) {
      st.state = "pending";
      st.position = Math.trunc(Number(pos));
      st.ahead = Number(ahead ?? 0);
      if (m && num(m.attempt) > 0) lastError(st, m);
    } else if (dead !== null) {
      st.state = "dead";
      const d = obj(deadrec) ?? {};
      // The record is the envelope plus the failure (docs/redis-schema.md); older ones nest it under "message".
      const msg = obj(d.message) ?? d;
      if (str(msg.task)) { st.task = str(msg.task); st.attempt = num(msg.attempt); }
      const f = obj(d.failure) ?? d;
      st.error = str(f.error);
      st.exitCode = f.exit_code === undefined ? undefined : Number(f.exit_code);
      st.stderrTail = str(f.stderr_tail);
      st.finishedAt = str(f.failed_at) || new Date(Number(dead)).toISOString();
    } else if (recd) {
      fromRecord(st, recd);
    }
    return st;
  }

  // --- schedules (docs/scheduler.md, "Redis layout") -----------------------

  private schedKeys(name: string): [string, string] {
    if (typeof name !== "string" || name === "") throw new InvalidArgument("name", "want a non-empty schedule name");
    return [this.prefix + ":schedule", `${this.prefix}:sched:${name}`];
  }

  /**
   * Adds or replaces an entry: the definition first, then score 0 (the
   * scheduler's leader plans it within its poll interval).
   */
  async schedulePut(name: string, definition: ScheduleDefinition): Promise<void> {
    const [index, h] = this.schedKeys(name);
    if (definition === null || typeof definition !== "object") throw new InvalidArgument("definition", "want an object");
    for (const f of ["queue", "task", "schedule"] as const) {
      if (!definition[f]) throw new InvalidArgument(`definition.${f}`, `schedule ${name}: required`);
    }
    checkQueue(definition.queue, "definition.queue");
    encodeArgs(definition.args);
    await this.redis.pipeline().hset(h, "definition", JSON.stringify(definition)).zadd(index, 0, name).exec()
      .then((res) => res?.forEach(([err]) => { if (err) throw err; }));
  }

  /** schedulePut of a new entry. */
  scheduleAdd(name: string, definition: ScheduleDefinition): Promise<void> { return this.schedulePut(name, definition); }
  /** schedulePut of an existing entry. */
  scheduleUpdate(name: string, definition: ScheduleDefinition): Promise<void> { return this.schedulePut(name, definition); }

  private async setEnabled(name: string, enabled: boolean): Promise<void> {
    const s = await this.scheduleGet(name);
    if (!s) throw new DroverError(`no schedule ${JSON.stringify(name)}`);
    const d: ScheduleDefinition = { ...s.definition };
    if (enabled) delete d.enabled;
    else d.enabled = false;
    await this.schedulePut(name, d);
  }

  async scheduleEnable(name: string): Promise<void> { return this.setEnabled(name, true); }
  async scheduleDisable(name: string): Promise<void> { return this.setEnabled(name, false); }

  /** Removes an entry; false when there was none. */
  async scheduleRemove(name: string): Promise<boolean> {
    const [index, h] = this.schedKeys(name);
    const removed = await this.redis.zrem(index, name);
    await this.redis.del(h);
    return removed > 0;
  }

  /** One entry, or null. */
  async scheduleGet(name: string): Promise<Schedule | null> {
    const [index, h] = this.schedKeys(name);
    const [d, meta] = await this.redis.hmget(h, "definition", "meta");
    if (d === null || d === undefined) return null;
    const score = await this.redis.zscore(index, name);
    return { name, definition: JSON.parse(d), nextDue: score === null ? null : Number(score), meta: obj(meta ?? null) };
  }

  /** Every entry, by name. */
  async schedules(): Promise<Schedule[]> {
    const names = (await this.redis.zrange(this.prefix + ":schedule", 0, -1)).sort();
    const out: Schedule[] = [];
    for (const n of names) {
      const s = await this.scheduleGet(n);
      if (s) out.push(s);
    }
    return out;
  }
}

/** The durable option with its defaults, checked; null when not given. */
function checkDurable(d: Durable | undefined): Required<Durable> | null {
  if (d === undefined || d === null) return null;
  if (typeof d !== "object") throw new InvalidArgument("durable", `want an object { replicas, timeoutMs, aof }, have ${d}`);
  const out = { replicas: d.replicas ?? 1, timeoutMs: d.timeoutMs ?? 500, aof: d.aof ?? false };
  if (!Number.isInteger(out.replicas) || out.replicas < 1) {
    throw new InvalidArgument("durable.replicas", `want an integer >= 1, have ${out.replicas}`);
  }
  if (!Number.isInteger(out.timeoutMs) || out.timeoutMs < 1) {
    throw new InvalidArgument("durable.timeoutMs", `want whole milliseconds > 0 (0 would wait forever), have ${out.timeoutMs}`);
  }
  if (typeof out.aof !== "boolean") throw new InvalidArgument("durable.aof", `want a boolean, have ${out.aof}`);
  return out;
}

/** An RFC 3339 time in µs since the epoch; 0 when it is not one. */
export function parseTimeUs(s: string): number {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(s);
  if (!m) return 0;
  const ms = Date.parse(m[1]! + m[3]!);
  if (Number.isNaN(ms)) return 0;
  return ms * 1000 + Number(((m[2] ?? "") + "000000").slice(0, 6));
}

/** user@host: who revoked, as drover ctl records it. */
function operator(): string {
  let name = "unknown";
  try { name = userInfo().username; } catch { /* no user name in this environment */ }
  return name + "@" + hostname();
}

function obj(v: unknown): Record<string, unknown> | null {
  if (v === null || v === undefined || v === false) return null;
  if (typeof v === "object" && !Array.isArray(v)) return v as Record<string, unknown>;
  if (typeof v !== "string") return null;
  try {
    const d = JSON.parse(v);
    return d !== null && typeof d === "object" && !Array.isArray(d) ? d : null;
  } catch {
    return null;
  }
}

function str(v: unknown): string { return typeof v === "string" ? v : ""; }
function num(v: unknown): number { return typeof v === "number" ? v : 0; }

function fromRecord(st: JobStatus, rec: Record<string, unknown>): void {
  st.state = str(rec.state) || "succeeded";
  if (typeof rec.task === "string") st.task = rec.task;
  if (typeof rec.attempt === "number") st.attempt = rec.attempt;
  st.member = str(rec.member);
  st.by = str(rec.by);
  if (typeof rec.duration_seconds === "number") st.durationSeconds = rec.duration_seconds;
  st.stdoutTail = str(rec.stdout_tail);
  if (typeof rec.finished_at === "string") st.finishedAt = rec.finished_at;
  if (st.state === "succeeded") st.exitCode = typeof rec.exit_code === "number" ? rec.exit_code : 0;
}

function lastError(st: JobStatus, m: Record<string, unknown>): void {
  const f = obj(m.last_error);
  if (f) {
    st.error = str(f.error);
    if (typeof f.exit_code === "number") st.exitCode = f.exit_code;
    st.stderrTail = str(f.stderr_tail);
  }
}
