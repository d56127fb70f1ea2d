/** Plain data the client takes and returns. */

/** When and how a message is enqueued, besides its queue, task and args. */
export interface EnqueueOptions {
  /** An idempotency key: enqueueing an id the queue still knows is a no-op (result -1). Default: a generated id. */
  id?: string;
  /** Seconds from now before the message is due (a delayed message). Not with due. */
  delay?: number;
  /** When the message is due. Not with delay. */
  due?: Date;
  /** Attempts before the dead letters; 0 or undefined: the queue's default. A bigint for values past 2^53. */
  maxAttempts?: number | bigint;
  /** String headers carried in the envelope. */
  headers?: Record<string, string>;
}

/**
 * The durable enqueue mode (the fleet's redis.durable): an enqueue is
 * acknowledged only once `replicas` replicas confirm its write (WAIT; with
 * aof, WAITAOF: the append-only file's fsync on the master and the
 * replicas, Redis 7.2+) within `timeoutMs`; else it rejects with
 * OutcomeUnknown.
 */
export interface Durable {
  /** Replicas that must confirm. Default 1. */
  replicas?: number;
  /** Bound of the wait, in whole milliseconds (> 0: 0 would wait forever). Default 500. */
  timeoutMs?: number;
  /** Wait for the append-only file's fsync too (WAITAOF). Default false. */
  aof?: boolean;
}

/** One message to enqueue (enqueueMany). What each field accepts: validate.ts (the Go producers' rules). */
export interface Job extends EnqueueOptions {
  queue: string;
  task: string;
  /** Any JSON value; undefined leaves args out of the envelope. */
  args?: unknown;
}

/** What an enqueue did with one message. */
export interface Enqueued {
  /** The message id: the caller's, or the generated one. */
  id: string;
  /** The position (> 0), 0 when delayed, -1 when the id was already known. */
  result: number;
}

/** The states a job's status can have (drover ctl job), except running, which only ZooKeeper knows. */
export type JobState = "pending" | "delayed" | "retrying" | "succeeded" | "failed" | "dead" | "revoked" | "unknown";

/** Where a job is now: the fields of `drover ctl job`. */
export interface JobStatus {
  queue: string;
  id: string;
  state: JobState | string;
  task: string;
  attempt: number;
  position: number;
  ahead?: number;
  dueAt?: string;
  finishedAt?: string;
  exitCode?: number;
  error: string;
  stderrTail: string;
  stdoutTail: string;
  member: string;
  by: string;
  durationSeconds?: number;
  asOf: string;
}

/** A schedule's definition (docs/scheduler.md): queue, task and schedule are required. */
export interface ScheduleDefinition {
  queue: string;
  task: string;
  args?: unknown;
  schedule:
    | { type: "interval"; every: string; relative?: boolean }
    | { type: "cron"; expr: string; timezone?: string }
    | { type: "at"; at: string };
  enabled?: boolean;
  catchup?: "once" | "skip" | "all";
  jitter?: string;
  [field: string]: unknown;
}

/** A scheduler entry: its name, definition, index score (0: to plan) and the scheduler's meta. */
export interface Schedule {
  name: string;
  definition: ScheduleDefinition;
  nextDue: number | null;
  meta: Record<string, unknown> | null;
}
