/**
 * The files `go run ./tools/pyscripts` writes into scripts/ (the Lua
 * the Go code runs, versions.json and rules.json, from queue/): read once
 * at import, from the package's own scripts/ folder.
 */
import { readFileSync } from "node:fs";

const dir = new URL("../scripts/", import.meta.url);

/** The text of one generated file. */
export function generated(name: string): string {
  return readFileSync(new URL(name, dir), "utf8");
}

/** Script name → version; "layout" is the enqueue script's version. */
export const VERSIONS: Readonly<Record<string, number>> = JSON.parse(generated("versions.json"));

/** The Redis layout version this client speaks (docs/redis-schema.md, Compatibility). */
export const LAYOUT_VERSION: number = VERSIONS["layout"]!;
