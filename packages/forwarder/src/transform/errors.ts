/**
 * The one error a transform's code gets when it is set: it does not compile, its top level fails,
 * or it defines no `function transform(message)`. A failure while a call runs is never thrown: it
 * is a result, `{ ok: false, reason }` (sandbox.ts).
 */
import { ValidationError } from 'eventrelay/internal';

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

  constructor(message: string, line?: number, column?: number) {
    super(line === undefined ? message : `${message} (line ${line}, column ${column ?? 1})`, 'code');
    this.line = line;
    this.column = column;
  }
}
