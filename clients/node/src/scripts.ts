/**
 * The Lua scripts the Go code runs (generated into scripts/ from
 * queue/scripts.go), called by hash with EVALSHA and sent whole with EVAL
 * only when the server does not have them (NOSCRIPT: a restart or a
 * SCRIPT FLUSH). Each script documents its KEYS and ARGV in its header.
 */
import { createHash } from "node:crypto";
import type { ChainableCommander, Redis } from "ioredis";
import { generated } from "./generated.js";

export class LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;

  constructor(file: string) {
    this.name = file;
    this.source = generated(file);
    this.sha = createHash("sha1").update(this.source).digest("hex");
  }

  /** Runs the script; its reply as ioredis decodes it. */
  async run(r: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await r.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (e) {
      if (!isNoScript(e)) throw e;
      return r.eval(this.source, keys.length, ...keys, ...args);
    }
  }

  /** Queues a call on a pipeline (answered by EVALSHA; see runPipeline). */
  queue(p: ChainableCommander, keys: string[], args: (string | number)[]): void {
    p.evalsha(this.sha, keys.length, ...keys, ...args);
  }
}

export function isNoScript(e: unknown): boolean {
  return e instanceof Error && e.message.startsWith("NOSCRIPT");
}

/** One pipelined call: a script's (to re-send whole on NOSCRIPT) or any other command's. */
export interface Call {
  script?: LuaScript;
  keys: string[];
  args: (string | number)[];
  other?: (p: ChainableCommander) => void;
}

/**
 * Sends calls in one pipeline (no transaction) and returns their replies
 * in order. A script call the server did not know (NOSCRIPT: it did
 * nothing) is sent again with EVAL; any other error is thrown.
 *
 * tail (the durable mode's barrier and wait) ends the pipeline and, when
 * scripts are sent again, the second pipeline too, so that it always
 * follows every write it must confirm on the same connection; its replies
 * (those of the last pipeline sent) follow the calls' in the result.
 */
export async function runPipeline(r: Redis, calls: Call[], tail: Call[] = []): Promise<unknown[]> {
  const p = r.pipeline();
  for (const c of [...calls, ...tail]) {
    if (c.script) c.script.queue(p, c.keys, c.args);
    else c.other!(p);
  }
  const res = (await p.exec()) ?? [];
  const out: unknown[] = new Array(calls.length + tail.length);
  const again: number[] = [];
  res.forEach(([err, v], i) => {
    if (i < calls.length && err && calls[i]!.script && isNoScript(err)) again.push(i);
    else if (err) throw err;
    else out[i] = v;
  });
  if (again.length) {
    const p2 = r.pipeline();
    for (const i of again) {
      const c = calls[i]!;
      p2.eval(c.script!.source, c.keys.length, ...c.keys, ...c.args);
    }
    for (const c of tail) c.other!(p2);
    const res2 = (await p2.exec()) ?? [];
    res2.forEach(([err, v], k) => {
      if (err) throw err;
      if (k < again.length) out[again[k]!] = v;
      else out[calls.length + k - again.length] = v;
    });
  }
  return out;
}
