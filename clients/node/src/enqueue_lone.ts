/**
 * The lone enqueue scripts (enqueue-one, enqueue-many, enqueue-spread;
 * docs/redis-schema.md, "The Go client's one-message script" and after):
 * what the Go producer sends for messages with a generated id that are due
 * now (queue/enqueue.go, enqueueSpread). They skip what such a message does
 * not use — the dedupe window, the due time, TIME (the producer's estimate
 * of Redis's clock stands in), the MGET — and enqueue-spread carries one
 * message to each of many queues in one call, its wake-ups one PUBLISH per
 * owner's batch channel.
 */
import { DroverError } from "./errors.js";
import { LuaScript, type Call } from "./scripts.js";

const oneScript = new LuaScript("enqueue_one.lua");
const manyScript = new LuaScript("enqueue_many.lua");
const spreadScript = new LuaScript("enqueue_spread.lua");

/** The most queues of one enqueue-spread call (the Go producer's spreadBatch): about five commands a queue. */
export const SPREAD_BATCH = 256;

/**
 * enqueue-spread's route of a queue: "read :owner, do not answer it". The
 * Go producer's route cache (which may send a channel instead) has
 * conditions — pattern subscribers, Cluster — this client does not track.
 */
const NO_ROUTE = "-";

/** One message for the lone scripts: a generated id, due now. */
export interface LoneMessage {
  queue: string;
  id: string;
  env: string;
}

/** One script call of a plan: its messages, in their order. */
export interface LoneCall<M extends LoneMessage = LoneMessage> {
  kind: "one" | "many" | "spread";
  msgs: M[];
}

/**
 * The calls that carry msgs, as the Go producer groups them: a queue with
 * one message in msgs goes in an enqueue-spread call with other such queues
 * (up to spreadBatch queues a call; a call left with one queue is an
 * enqueue-one), a queue with several in enqueue-many calls of its own (up
 * to maxMany messages each, in their order; a last chunk of one is an
 * enqueue-one). Every message is in exactly one call, and a queue's
 * messages keep their order across its calls. Pure: no I/O.
 */
export function planLone<M extends LoneMessage>(msgs: M[], maxMany: number, spreadBatch = SPREAD_BATCH): LoneCall<M>[] {
  const byQueue = new Map<string, M[]>();
  for (const m of msgs) {
    const q = byQueue.get(m.queue);
    if (q) q.push(m);
    else byQueue.set(m.queue, [m]);
  }
  const calls: LoneCall<M>[] = [];
  let spread: LoneCall<M> | null = null;
  for (const items of byQueue.values()) {
    if (items.length === 1) {
      if (!spread || spread.msgs.length === spreadBatch) calls.push((spread = { kind: "spread", msgs: [] }));
      spread.msgs.push(items[0]!);
      continue;
    }
    for (let s = 0; s < items.length; s += maxMany) calls.push({ kind: "many", msgs: items.slice(s, s + maxMany) });
  }
  for (const c of calls) if (c.msgs.length === 1) c.kind = "one";
  return calls;
}

/** The four keys of a queue the lone scripts take: log, msg, seq, owner. */
export type LoneKeys = (queue: string) => [string, string, string, string];

/**
 * The script call of c. wake is the unowned wake-up channel ("" for no
 * wake-up), clock the estimate of Redis's clock as decimal digits ("0" for
 * none).
 */
export function loneScriptCall(c: LoneCall, keys: LoneKeys, wake: string, clock: string): Call {
  switch (c.kind) {
    case "one": {
      const m = c.msgs[0]!;
      // No ARGV[6] (the route): the script reads :owner.
      return { script: oneScript, keys: keys(m.queue), args: [wake, m.queue, m.id, m.env, clock] };
    }
    case "many": {
      const q = c.msgs[0]!.queue;
      const args: string[] = [wake, q, clock];
      for (const m of c.msgs) args.push(m.id, m.env);
      return { script: manyScript, keys: keys(q), args };
    }
    case "spread": {
      const k: string[] = [];
      const args: string[] = [wake, clock];
      for (const m of c.msgs) {
        k.push(...keys(m.queue));
        args.push(m.queue, m.id, m.env, NO_ROUTE);
      }
      return { script: spreadScript, keys: k, args };
    }
  }
}

/**
 * The results of c's messages, in their order, from its script's reply:
 * the position (> 0), or -1 for an id :msg already held. Throws when the
 * reply does not have one result per message.
 */
export function loneResults(c: LoneCall, reply: unknown): number[] {
  let res: unknown = reply;
  if (c.kind === "one") res = [reply];
  else if (c.kind === "spread") res = Array.isArray(reply) ? reply[0] : undefined; // [positions, routes]
  if (!Array.isArray(res) || res.length !== c.msgs.length) {
    throw new DroverError(`drover enqueue-${c.kind}: answered ${JSON.stringify(reply)} for ${c.msgs.length} messages`);
  }
  return res.map((v) => (Number(v) > 0 ? Number(v) : -1));
}
