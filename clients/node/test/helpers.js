// Shared by the suites: the environment the Go tests set, and polling.
import { randomBytes } from "node:crypto";

/** The variable's value; a missing one fails the suite (run it through the Go test). */
export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} not set: run through go test ./examples -run TestNodeClient (or see clients/node/README.md)`);
  return v;
}

export const randomSuffix = () => randomBytes(4).toString("hex");

/** Polls cond until it returns a truthy value; the bound only keeps a broken fleet from hanging the suite. */
export async function waitFor(what, cond, guardMs = 90_000) {
  const deadline = Date.now() + guardMs;
  while (Date.now() < deadline) {
    const v = await cond();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Every key under prefix. */
export async function keysUnder(redis, prefix) {
  const out = [];
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", prefix + "*", "COUNT", 1000);
    out.push(...keys);
    cursor = next;
  } while (cursor !== "0");
  return out.sort();
}
