/**
 * Checks of a URL's `transform` before it is stored: the quick one the config file gets
 * (synchronous: the code's syntax and that it names `transform`), and the whole one the admin API
 * and the test route get (the code compiled in its sandbox: its top level run, `transform` found).
 * Both throw a `TransformCompileError` whose `field` is the code's path, with line and column.
 */
import { Script } from 'node:vm';
import { TransformCompileError } from './errors';
import { compileTransform } from './sandbox';
import type { WebhookTransform } from '../store/contract';

export { TRANSFORM_TIMEOUT, transformOption } from './options';

/** A declaration of `transform` that a script's top level makes: a function, or a const/let/var. */
const DECLARES = /(^|[^\w$.])(function\s*\*?\s*transform\s*\(|(const|let|var)\s+transform\s*=)/;

/**
 * The quick check, with no code run: `code` parses as a script (V8's parser, the same language as
 * the sandbox's) and declares `transform`. A top level that throws when run is found by the whole
 * check (`checkTransformRuns`) or, at the latest, fails the URL's calls with its reason.
 */
export function checkTransformSyntax(code: string, field: string): void {
  try {
    // Compiled, never run: a Script's code executes only when asked to.
    new Script(code, { filename: 'transform.js' });
  } catch (error) {
    const where = syntaxPosition(error);
    const message = error instanceof Error ? error.message : String(error);
    const what = `Expected \`code\` to be JavaScript that defines \`function transform(message)\`: it does not compile, SyntaxError: ${message}`;
    throw withField(new TransformCompileError(what, where?.line, where?.column), field);
  }
  if (!DECLARES.test(code)) {
    throw withField(new TransformCompileError('Expected `code` to define `function transform(message)`, which returns the body to send (or null to skip); found none'), field);
  }
}

/** The whole check: `code` compiled in a sandbox of its own (its top level run once), then freed. */
export async function checkTransformRuns(transform: WebhookTransform, field: string): Promise<void> {
  try {
    const compiled = await compileTransform(transform.code, transform.timeoutMs === undefined ? {} : { timeoutMs: transform.timeoutMs });
    compiled.dispose();
  } catch (error) {
    if (error instanceof TransformCompileError) throw withField(error, field);
    throw error;
  }
}

/** The same error with the code's path under `field` (`sources[0]...webhooks[1].transform.code`). */
function withField(error: TransformCompileError, field: string): TransformCompileError {
  return error.at(field === '' ? 'code' : `${field}.code`);
}

/**
 * Line and column of a V8 SyntaxError from `new Script`: its stack starts with
 * `transform.js:LINE`, the line's text, and a caret under the place.
 */
function syntaxPosition(error: unknown): { line: number; column: number } | undefined {
  const stack = error instanceof Error ? error.stack : undefined;
  if (stack === undefined) return undefined;
  const lines = stack.split('\n');
  const head = /^transform\.js:(\d+)$/.exec(lines[0] ?? '');
  if (head === null) return undefined;
  const caret = (lines[2] ?? '').indexOf('^');
  return { line: Number(head[1]), column: caret < 0 ? 1 : caret + 1 };
}
