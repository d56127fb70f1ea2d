/**
 * The HTTP producer: enqueue, status and revoke over `drover web`'s
 * /api/v1 (docs/http-api.md) with a producer token, for callers without
 * Redis access. Node's own fetch; nothing else.
 */
import { HTTPError, InvalidArgument } from "./errors.js";
import { attempts, checkJob, checkQueue, encodeArgs } from "./validate.js";
import type { EnqueueOptions, Job } from "./types.js";

/**
 * The API's job body for j, sent to queue; refuses, as the Redis client
 * does, what the API would refuse.
 */
export function jobBody(j: Job, queue: string, index?: number): Record<string, unknown> {
  if (j === null || typeof j !== "object") throw new InvalidArgument("job", `want a Job object, have ${j}`, index);
  checkJob({ ...j, queue }, index);
  const argsJSON = encodeArgs(j.args, index);
  const d: Record<string, unknown> = { task: j.task };
  if (argsJSON !== undefined) d.args = JSON.parse(argsJSON);
  if (j.id !== undefined) d.id = j.id;
  if (j.headers && Object.keys(j.headers).length) d.headers = { ...j.headers };
  const ma = attempts(j.maxAttempts, index);
  if (ma) d.max_attempts = ma; // a placeholder replaced by the exact integer in the body text
  if (j.due !== undefined) d.at = j.due.toISOString();
  else if (j.delay) d.in = `${Math.floor(j.delay * 1000)}ms`;
  return d;
}

/** JSON text with max_attempts as a JSON integer (exact past 2^53). */
function bodyText(body: unknown): string {
  return JSON.stringify(body, (k, v) => (k === "max_attempts" && typeof v === "string" ? `\u0000int:${v}` : v))
    .replace(/"\\u0000int:(\d+)"/g, "$1");
}

/**
 * A Drover producer over HTTP:
 *
 *     const c = new HTTPClient("http://127.0.0.1:8080", token);
 *     await c.enqueue("emails", "send", { to: "a@example.com" });
 *
 * token is a producer token (`drover web token NAME producer`).
 */
export class HTTPClient {
  readonly url: string;
  private readonly token: string;
  private readonly timeoutMs: number;

  constructor(url: string, token: string, opts: { timeoutMs?: number } = {}) {
    this.url = url.replace(/\/+$/, "") + "/api/v1";
    this.token = token;
    this.timeoutMs = opts.timeoutMs ?? 30000;
  }

  /** One API call; rejects with HTTPError on an error status. */
  async call(method: string, path: string, body?: unknown): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
    const headers: Record<string, string> = { Accept: "application/json", Authorization: "Bearer " + this.token };
    let data: string | undefined;
    if (body !== undefined) {
      data = bodyText(body);
      headers["Content-Type"] = "application/json";
    }
    const resp = await fetch(this.url + path, { method, headers, body: data, signal: AbortSignal.timeout(this.timeoutMs) });
    const raw = await resp.text();
    if (!resp.ok) {
      let msg = resp.statusText;
      try { msg = JSON.parse(raw).error ?? msg; } catch { /* not JSON */ }
      throw new HTTPError(resp.status, `${method} ${path}: ${msg}`);
    }
    return raw ? JSON.parse(raw) : null;
  }

  /**
   * Enqueues one job; resolves to the API's answer (id, position or
   * delayed/due_at, or duplicate). Rejects with InvalidArgument, sending
   * nothing, for a job the API would refuse.
   */
  async enqueue(queue: string, task: string, args?: unknown, opts: EnqueueOptions = {}) {
    const body = jobBody({ ...opts, queue, task, args }, queue);
    return this.call("POST", `/queues/${enc(queue)}/jobs`, body);
  }

  /** Enqueues a batch to one queue (each job's own queue is ignored) in one request; every job is checked before it is sent. */
  async enqueueMany(queue: string, jobs: Iterable<Job>) {
    checkQueue(queue);
    const body = { jobs: [...jobs].map((j, i) => jobBody(j, queue, i)) };
    return this.call("POST", `/queues/${enc(queue)}/jobs`, body);
  }

  /** Where the job is now (the fields of `drover ctl job --json`). */
  async status(queue: string, id: string) {
    checkQueue(queue);
    return this.call("GET", `/queues/${enc(queue)}/jobs/${enc(id)}`);
  }

  /** Revokes a delayed job (recorded `revoked`, by the token's name). */
  async revoke(queue: string, id: string) {
    checkQueue(queue);
    return this.call("DELETE", `/queues/${enc(queue)}/jobs/${enc(id)}`);
  }
}

const enc = encodeURIComponent;
