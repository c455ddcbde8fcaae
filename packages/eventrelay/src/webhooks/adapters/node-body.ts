import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebhookResponse } from '../receiver';
import { bodyTooLarge } from '../body';
import { InvalidArgumentError, NetworkError } from '../../errors';
import { readNodeRequest } from '../../internal/node-body';

/** A Node request that a framework may have decorated (Express, Connect, body-parser). */
export type NodeRequest = IncomingMessage & { body?: unknown; _body?: boolean };

/** Whether something else has read, or is reading, the request stream already. */
export function isBodyConsumed(request: NodeRequest): boolean {
  return request.readableEnded || request._body === true || request.readableFlowing === true;
}

/** The error for a body that a parser read before the webhook adapter ran. */
export function consumedBodyError(): InvalidArgumentError {
  return new InvalidArgumentError(
    'The request body was read before the webhook adapter got it (a body parser such as ' +
    'express.json() ran first), so its exact bytes are gone and the signature cannot be checked. ' +
    'Mount the webhook route before express.json() (or leave it out of the parser), or put ' +
    "express.raw({ type: '*/*', limit: '1mb' }) in front of the webhook middleware.",
    'rawBody',
  );
}

/**
 * Reads the whole body into one Buffer (no copy when it came in one chunk). Rejects with
 * `PayloadTooLargeError` as soon as it is known to pass `limit` (from Content-Length, or
 * while streaming), `InvalidArgumentError` when it was consumed already, and `NetworkError`
 * when the client went away.
 */
export async function readNodeBody(request: NodeRequest, limit: number): Promise<Buffer> {
  if (isBodyConsumed(request)) throw consumedBodyError();
  let read;
  try {
    // 'stop': a body over the limit is answered 413 unread (the connection then closes).
    read = await readNodeRequest(request, { limit, excess: 'stop' });
  } catch (error) {
    throw new NetworkError('The request body could not be read: the client went away.', { cause: error, code: 'ERR_BODY_READ' });
  }
  if (!read.ok) throw bodyTooLarge(read.size, limit);
  return read.body;
}

/** Writes the receiver's answer, unless the handler already answered on its own. */
export function writeNodeResponse(request: NodeRequest, response: ServerResponse, answer: WebhookResponse): void {
  if (response.headersSent || response.writableEnded) return;
  // An unread body would otherwise be read and dropped before the socket can be reused.
  if (!request.readableEnded) response.setHeader('connection', 'close');
  response.writeHead(answer.status, answer.headers);
  response.end(answer.body ?? undefined);
}
