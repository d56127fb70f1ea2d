/**
 * What an enqueue accepts, checked before anything is written.
 *
 * The limits are the Go code's (queue.Rules, generated into
 * scripts/rules.json by `go run ./tools/pyscripts`, the same file the
 * Python client reads; a Go test fails while a committed copy differs):
 * queue names as drover.ValidateQueueName, ids, task and maxAttempts as
 * Producer.Enqueue, args as JSON without NaN or Infinity, delay and due
 * as the HTTP API's `in` and `at`. This module only applies them; every
 * refusal is an InvalidArgument naming the field.
 */
import { InvalidArgument } from "./errors.js";
import { generated } from "./generated.js";

interface Rules {
  queue: { max_bytes: number; reserved: string[]; forbidden: [number, number][] };
  id: { max_bytes: number; forbidden: [number, number][] };
  task: { min_bytes: number };
  max_attempts: { min: number; max: number };
  delay: { min_seconds: number; max_seconds: number };
  exclusive: [string, string][];
}

const rulesText = generated("rules.json");

/** The producer rules, as rules.json holds them. */
export const RULES: Readonly<Rules> = JSON.parse(rulesText);

// max_attempts' bounds exactly: JSON.parse reads 2^63-1 as the double 2^63.
const attemptBounds = /"max_attempts":\s*\{\s*"min":\s*(-?\d+),\s*"max":\s*(-?\d+)/.exec(rulesText);
if (!attemptBounds) throw new Error("rules.json: no max_attempts bounds");
const ATTEMPTS_MIN = BigInt(attemptBounds[1]!);
const ATTEMPTS_MAX = BigInt(attemptBounds[2]!);

const FORBIDDEN = RULES.queue.forbidden;

// The API's name of each rule's field (rules.json speaks the wire's).
const API_NAME: Record<string, string> = { delay: "delay", due: "due", max_attempts: "maxAttempts" };

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "object") return (v as object).constructor?.name ?? "object";
  return typeof v;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** v as UTF-8 byte length; refuses what is not well-formed text (a lone surrogate: Go would read U+FFFD, another string). */
function text(field: string, v: unknown, index?: number): number {
  if (typeof v !== "string") throw new InvalidArgument(field, `want a string, have ${typeName(v)}`, index);
  const lone = LONE_SURROGATE.exec(v);
  if (lone) throw new InvalidArgument(field, `not valid UTF-8 text (a lone surrogate at index ${lone.index})`, index);
  return Buffer.byteLength(v, "utf8");
}

function forbidden(cp: number, ranges: [number, number][] = FORBIDDEN): boolean {
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [a, b] = ranges[mid]!;
    if (cp < a) hi = mid - 1;
    else if (cp > b) lo = mid + 1;
    else return true;
  }
  return false;
}

/**
 * Refuses a name drover.ValidateQueueName refuses: empty, over max_bytes
 * bytes, reserved, or holding '/', ':', '{', '}', white space or control
 * characters.
 */
export function checkQueue(name: unknown, field = "queue", index?: number): asserts name is string {
  const n = text(field, name, index);
  const s = name as string;
  if (n === 0) throw new InvalidArgument(field, "empty", index);
  if (n > RULES.queue.max_bytes) throw new InvalidArgument(field, `${n} bytes, at most ${RULES.queue.max_bytes}`, index);
  if (RULES.queue.reserved.includes(s)) throw new InvalidArgument(field, `${JSON.stringify(s)} is reserved`, index);
  let at = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (forbidden(cp)) {
      const hex = cp.toString(16).toUpperCase().padStart(4, "0");
      throw new InvalidArgument(field, `${JSON.stringify(s)} holds ${JSON.stringify(ch)} (U+${hex}) at byte ${at}: ` +
        "a queue name holds no '/', ':', '{', '}', white space or control characters", index);
    }
    at += Buffer.byteLength(ch, "utf8");
  }
}

/** What checkJob looks at: a Job's fields. */
export interface JobFields {
  queue: unknown;
  task: unknown;
  id?: unknown;
  delay?: unknown;
  due?: unknown;
  maxAttempts?: unknown;
  headers?: unknown;
}

/**
 * Refuses a message any Go producer would refuse (args are checked when
 * encoded: encodeArgs). An undefined id means a generated one.
 */
export function checkJob(j: JobFields, index?: number): void {
  checkQueue(j.queue, "queue", index);
  if (text("task", j.task, index) < RULES.task.min_bytes) throw new InvalidArgument("task", "required, have an empty string", index);
  if (j.id !== undefined) {
    const n = text("id", j.id, index);
    if (n === 0) throw new InvalidArgument("id", "empty: leave it undefined for a generated id", index);
    if (n > RULES.id.max_bytes) throw new InvalidArgument("id", `${n} bytes, at most ${RULES.id.max_bytes}`, index);
    let at = 0;
    for (const ch of j.id as string) {
      const cp = ch.codePointAt(0)!;
      if (forbidden(cp, RULES.id.forbidden)) {
        throw new InvalidArgument("id", `holds U+${cp.toString(16).toUpperCase().padStart(4, "0")} at byte ${at}: an id holds no control or bidirectional characters`, index);
      }
      at += Buffer.byteLength(ch, "utf8");
    }
  }
  attempts(j.maxAttempts, index);
  if (j.headers !== undefined && j.headers !== null) {
    const h = j.headers;
    if (typeof h !== "object" || Array.isArray(h) || h instanceof Map) {
      throw new InvalidArgument("headers", `want an object of string to string, have ${typeName(h)}`, index);
    }
    for (const [k, v] of Object.entries(h)) {
      text("headers", k, index);
      text(`headers[${JSON.stringify(k)}]`, v, index);
    }
  }
  const given: Record<string, boolean> = { delay: j.delay !== undefined, due: j.due !== undefined };
  for (const [a, b] of RULES.exclusive) {
    const [x, y] = [API_NAME[a] ?? a, API_NAME[b] ?? b];
    if (given[x] && given[y]) throw new InvalidArgument(y, `give ${x} or ${y}, not both`, index);
  }
  if (j.delay !== undefined) {
    const d = RULES.delay;
    if (typeof j.delay !== "number") throw new InvalidArgument("delay", `want seconds (a number), have ${typeName(j.delay)}`, index);
    if (!Number.isFinite(j.delay) || j.delay < d.min_seconds || j.delay > d.max_seconds) {
      throw new InvalidArgument("delay", `${j.delay}: want finite seconds from ${d.min_seconds} to ${d.max_seconds}`, index);
    }
  }
  if (j.due !== undefined) {
    if (!(j.due instanceof Date)) throw new InvalidArgument("due", `want a Date, have ${typeName(j.due)}`, index);
    if (Number.isNaN(j.due.getTime())) throw new InvalidArgument("due", "an invalid Date", index);
  }
}

/**
 * maxAttempts as the envelope's JSON integer text ("" for the queue's
 * default): a safe integer (a larger number does not say which integer it
 * means) or a bigint, from min to max; undefined and null are 0.
 */
export function attempts(v: unknown, index?: number): string {
  if (v === undefined || v === null) return "";
  let b: bigint;
  if (typeof v === "bigint") b = v;
  else if (typeof v === "number" && Number.isInteger(v)) {
    if (!Number.isSafeInteger(v)) {
      throw new InvalidArgument("maxAttempts", `${v} is past 2^53: pass a bigint for an exact integer`, index);
    }
    b = BigInt(v);
  } else {
    throw new InvalidArgument("maxAttempts", `want an integer, have ${typeof v === "number" ? v : typeName(v)}`, index);
  }
  if (b < ATTEMPTS_MIN || b > ATTEMPTS_MAX) {
    throw new InvalidArgument("maxAttempts", `${b}: want ${ATTEMPTS_MIN} to ${ATTEMPTS_MAX} (0: the queue's default)`, index);
  }
  return b === 0n ? "" : b.toString();
}

/**
 * args as compact JSON (undefined when args is undefined); refuses what
 * JSON cannot hold as given — NaN, Infinity, a bigint, a function or
 * symbol, a Map or Set (JSON.stringify would write {}), undefined in an
 * array (it would write null), a cycle — where JSON.stringify would throw,
 * or change or drop the value without a word.
 */
export function encodeArgs(args: unknown, index?: number): string | undefined {
  if (args === undefined) return undefined;
  const stack: object[] = [];
  const walk = (v: unknown, path: string): void => {
    switch (typeof v) {
      case "string": case "boolean": return;
      case "number":
        if (!Number.isFinite(v)) throw new InvalidArgument("args", `${path} is ${v}: not JSON`, index);
        return;
      case "bigint": case "function": case "symbol":
        throw new InvalidArgument("args", `${path} is a ${typeof v}: not JSON`, index);
      case "undefined":
        throw new InvalidArgument("args", `${path} is undefined: not JSON`, index);
    }
    if (v === null) return;
    const o = v as { toJSON?: () => unknown };
    if (typeof o.toJSON === "function") return walk(o.toJSON(), path);
    if (v instanceof Map || v instanceof Set || v instanceof WeakMap || v instanceof WeakSet) {
      throw new InvalidArgument("args", `${path} is a ${typeName(v)}: JSON would hold {}`, index);
    }
    if (stack.includes(v as object)) throw new InvalidArgument("args", `${path} refers back to itself: a cycle`, index);
    stack.push(v as object);
    if (Array.isArray(v)) v.forEach((e, i) => walk(e, `${path}[${i}]`));
    else {
      for (const [k, e] of Object.entries(v as object)) {
        if (e === undefined) continue; // an absent property, as JSON.stringify drops it
        walk(e, `${path}.${k}`);
      }
    }
    stack.pop();
  };
  walk(args, "args");
  return JSON.stringify(args);
}
