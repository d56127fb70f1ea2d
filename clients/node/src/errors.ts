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
