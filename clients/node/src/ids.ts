/** Message ids: unique, URL-safe, sortable by creation time. */
import { randomBytes } from "node:crypto";

let lastNs = 0n;

/**
 * Random bytes are drawn RANDOM_POOL_BYTES at a time and handed out 8 per
 * id: one randomBytes call (a trip into OpenSSL and, on a fresh draw, the
 * kernel) for 512 ids instead of one each, which cost a lone enqueue about
 * 5 µs of CPU (crypto.randomUUID pools its entropy for the same reason).
 * An id needs to be unique, not secret: the bytes only keep two producers
 * that read the same nanosecond apart.
 */
const RANDOM_POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let used = 0;

/** The next 8 random bytes of the pool, as hex. */
function random8(): string {
  if (used + 8 > pool.length) {
    pool = randomBytes(RANDOM_POOL_BYTES);
    used = 0;
  }
  const hex = pool.toString("hex", used, used + 8);
  used += 8;
  return hex;
}

/**
 * A generated message id: "js-" + time in ns (hex) + 8 random bytes (hex),
 * as the Python client's "py-" ids. Any non-empty string is a valid id; a
 * caller-chosen id (an idempotency key) is remembered for the dedupe window.
 */
export function newId(): string {
  let ns = BigInt(Date.now()) * 1000000n;
  if (ns <= lastNs) ns = lastNs + 1n; // sortable within a millisecond
  lastNs = ns;
  return `js-${ns.toString(16)}-${random8()}`;
}
