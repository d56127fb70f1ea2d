/**
 * Drover's first-party Node.js client (docs/node.md).
 *
 * - Client: enqueue (one and many), revoke, job status and schedules
 *   straight on Redis (ioredis), with the Lua the Go code runs (generated
 *   from queue/scripts.go into scripts/).
 * - HTTPClient: the same producer calls over the web API (/api/v1) with a
 *   token.
 * - "@drover-dev/drover/pool": serve async Node functions as pooled
 *   children of `drover worker`, or one task per process.
 */
export { Client, DEFAULT_DEDUPE_WINDOW_MS, MAX_SCRIPT_BATCH, type ClientOptions } from "./client.js";
export { HTTPClient } from "./http.js";
export { DroverError, HTTPError, InvalidArgument, LayoutError, OutcomeUnknown } from "./errors.js";
export { LAYOUT_VERSION, VERSIONS } from "./generated.js";
export { RULES, checkJob, checkQueue, encodeArgs } from "./validate.js";
export { newId } from "./ids.js";
export type { Durable, EnqueueOptions, Enqueued, Job, JobState, JobStatus, Schedule, ScheduleDefinition } from "./types.js";
