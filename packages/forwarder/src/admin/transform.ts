import type { ServerResponse } from 'node:http';
import { fail, send } from '../http/server';
import { compileTransform } from '../transform/sandbox';
import { TransformCompileError } from '../transform/errors';
import type { AdminHandlers } from './sources';

/**
 * `POST /admin/transform/test { code, message, timeoutMs? }`: the code compiled in a sandbox of its
 * own, run once on `message`, then freed. 200 `{ output, durationMs }` (`output` null: the call
 * would be skipped); 422 `transform_failed` when the call fails; 400 `invalid_request`, field
 * `code`, with `line` and `column`, when the code does not compile. Nothing is stored or sent.
 */
export const TRANSFORM_HANDLERS = {
  testTransform: (_o, { body }, _req, res) => testTransform(body.code, body.message, body.timeoutMs, res),
} satisfies AdminHandlers<object>;

async function testTransform(code: string, message: object, timeoutMs: number | undefined, res: ServerResponse): Promise<void> {
  let transform;
  try {
    transform = await compileTransform(code, timeoutMs === undefined ? {} : { timeoutMs });
  } catch (error) {
    if (!(error instanceof TransformCompileError)) throw error;
    const where = error.line === undefined ? {} : { line: error.line, column: error.column ?? 1 };
    fail(res, 400, 'invalid_request', error.message, { field: 'code', ...where }, { 'Cache-Control': 'no-store' });
    return;
  }
  try {
    const result = await transform.run(message);
    const durationMs = Math.round(result.durationMs * 1000) / 1000;
    if (!result.ok) {
      fail(res, 422, 'transform_failed', `transform_failed: ${result.reason}`, { durationMs }, { 'Cache-Control': 'no-store' });
      return;
    }
    send(res, 200, { output: result.skip ? null : result.output, durationMs }, { 'Cache-Control': 'no-store' });
  } finally {
    transform.dispose();
  }
}
