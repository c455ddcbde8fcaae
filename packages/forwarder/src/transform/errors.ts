/**
 * The one error a transform's code gets when it is set: it does not compile, its top level fails,
 * or it defines no `function transform(message)`. A failure while a call runs is never thrown: it
 * is a result, `{ ok: false, reason }` (sandbox.ts).
 */
import { EventRelayError, ValidationError } from 'eventrelay/internal';

/**
 * The code of a transform cannot be used. A `ValidationError` whose `field` is `code` (the admin
 * API answers it as a 400 `invalid_request` naming `code`), with the line and column (1-based)
 * where the parser or the top level stopped, when there is one.
 */
export class TransformCompileError extends ValidationError {
  /** 1-based line in the code, or undefined when the problem has no place (no `transform` defined). */
  readonly line: number | undefined;
  /** 1-based column in that line, or undefined. */
  readonly column: number | undefined;
  /** The message without its place. */
  readonly detail: string;

  /** `field`: the code's path where it was given (`webhooks[0].transform.code`); default `code`. */
  constructor(message: string, line?: number, column?: number, field = 'code') {
    super(line === undefined ? message : `${message} (line ${line}, column ${column ?? 1})`, field);
    this.line = line;
    this.column = column;
    this.detail = message;
  }

  /** The same problem, for the code at `field`. */
  at(field: string): TransformCompileError {
    return new TransformCompileError(this.detail, this.line, this.column, field);
  }
}

/**
 * A URL's transform failed for one call (a throw, a timeout, out of memory, an output that is not
 * JSON or is too large): that URL's outcome for the call, final (never retried). Its message is
 * `transform_failed: <reason>` and holds no part of the message.
 */
export class TransformFailedError extends EventRelayError {
  /** Never retried: the same code on the same message fails the same way. */
  readonly retryable = false;

  constructor(reason: string) {
    super(`transform_failed: ${reason}`, 'ERR_TRANSFORM');
  }
}
