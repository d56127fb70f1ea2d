/** Message ids: unique, URL-safe, sortable by creation time. */
import { randomBytes } from "node:crypto";

let lastNs = 0n;

/**
 * A generated message id: "js-" + time in ns (hex) + 8 random bytes (hex),
 * as the Python client's "py-" ids. Any non-empty string is a valid id; a
 * caller-chosen id (an idempotency key) is remembered for the dedupe window.
 */
export function newId(): string {
  let ns = BigInt(Date.now()) * 1000000n;
  if (ns <= lastNs) ns = lastNs + 1n; // sortable within a millisecond
  lastNs = ns;
  return `js-${ns.toString(16)}-${randomBytes(8).toString("hex")}`;
}
