import type { IncomingMessage, ServerResponse } from 'node:http';
import { isPlainObject } from 'eventrelay/internal';
import { fail } from '../http/server';
import { readBody } from '../http/read-body';

/**
 * Reads a JSON object body of at most `limit` bytes and hands it on; 413 (and the connection
 * closed) past it, 400 for a body that is not a JSON object. `optional`: an empty body is `{}`.
 */
export async function withBody(
  req: IncomingMessage,
  res: ServerResponse,
  limit: number,
  next: (body: Record<string, unknown>) => Promise<void>,
  optional = false,
): Promise<void> {
  const read = await readBody(req, limit);
  if (!read.ok) {
    fail(res, 413, 'body_too_large', `The request body is larger than ${limit} bytes`, { limit }, { Connection: 'close' });
    return;
  }
  if (optional && read.body.length === 0) {
    await next({});
    return;
  }
  let body: unknown;
  try {
    body = JSON.parse(read.body.toString('utf8'));
  } catch {
    body = undefined;
  }
  if (!isPlainObject(body)) {
    fail(res, 400, 'invalid_json', 'Expected a JSON object body');
    return;
  }
  await next(body);
}
