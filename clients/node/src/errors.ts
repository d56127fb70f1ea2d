/** Errors the client throws. */

/** A call Drover refused or could not complete. */
export class DroverError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The Redis holds a Drover layout version this client does not speak. */
export class LayoutError extends DroverError {}

/**
 * A message (or a queue name) the Go producers would refuse; nothing was
 * written. `field` names the argument as this client's API spells it
 * ("queue", "id", "task", "args", "headers", "maxAttempts", "delay",
 * "due"); `index` is the job's place in an enqueueMany batch (undefined
 * for a single call); `problem` says what is wrong.
 */
export class InvalidArgument extends DroverError {
  readonly field: string;
  readonly problem: string;
  readonly index: number | undefined;

  constructor(field: string, problem: string, index?: number) {
    super(`${index !== undefined ? `jobs[${index}]: ` : ""}${field}: ${problem}`);
    this.field = field;
    this.problem = problem;
    this.index = index;
  }
}

/** The HTTP API answered with an error status. */
export class HTTPError extends DroverError {
  readonly status: number;

  constructor(status: number, message: string) {
    super(`${status}: ${message}`);
    this.status = status;
  }
}

/**
 * An enqueue Redis may hold but did not confirm as replicated (the
 * client's durable mode): its write reached the master, or its outcome is
 * not known at all, and a failover now could lose it. `ids` are every job
 * of the call, generated ids included; enqueueing them again is safe (a
 * job already in is answered -1, duplicate, and not written twice), and
 * the retry is acknowledged only once the replicas confirm it. `reason`
 * says what the confirmation answered.
 */
export class OutcomeUnknown extends DroverError {
  readonly ids: string[];
  readonly reason: string;

  constructor(ids: string[], reason: string) {
    super(`outcome unknown: enqueue of ${ids.join(", ")} not confirmed by the replicas (${reason}): enqueue the same ids again`);
    this.ids = [...ids];
    this.reason = reason;
  }
}
