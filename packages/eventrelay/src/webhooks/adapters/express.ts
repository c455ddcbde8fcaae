import type { IncomingMessage, ServerResponse } from 'node:http';
import { consumedBodyError, isBodyConsumed, readNodeBody, writeNodeResponse } from './node-body';
import type { NodeRequest } from './node-body';
import type { NodeWebhookOptions } from './node';
import { log } from '../log';
import { createWebhookReceiver, METHOD_NOT_ALLOWED } from '../receiver';

/**
 * Express (4 and 5) and Connect middleware. Mount it on the webhook route before any JSON
 * body parser (or on a route without one): it reads the raw body itself. If
 * `express.raw()` ran first, it uses that Buffer. If a parser already consumed the body it
 * calls `next(error)` with an `InvalidArgumentError` saying how to mount it, instead of
 * waiting for a body that will never come. Throws `ConfigError` for bad options.
 */
export function webhookMiddleware(
  options: NodeWebhookOptions,
): (request: IncomingMessage, response: ServerResponse, next: (error?: unknown) => void) => void {
  const receiver = createWebhookReceiver(options);
  const limit = receiver.options.maxBodySize;
  return (request: NodeRequest, response, next) => {
    if (request.method !== 'POST') {
      writeNodeResponse(request, response, METHOD_NOT_ALLOWED);
      return;
    }
    const parsed = request.body;
    let body: Uint8Array | (() => Promise<Buffer>);
    if (parsed instanceof Uint8Array) body = parsed; // express.raw(): the exact bytes
    else if (isBodyConsumed(request)) return next(consumedBodyError());
    else body = () => readNodeBody(request, limit);
    // receive() never rejects; writing the answer can throw (a handler that broke the response),
    // and that goes to Express's error handling, never to an unhandled rejection.
    void receiver.receive({ body, headers: request.headers, context: { request, response } }).then((answer) => {
      try {
        writeNodeResponse(request, response, answer);
      } catch (error) {
        passOn(next, error, response);
      }
    });
  };
}

/** Hands a failure to `next`; should `next` itself throw, the connection is closed rather than left hanging. */
function passOn(next: (error?: unknown) => void, error: unknown, response: ServerResponse): void {
  try {
    next(error);
  } catch (nextError) {
    log('next(error) threw while reporting a failure to write the answer: %s', nextError instanceof Error ? nextError.name : typeof nextError);
    response.destroy();
  }
}
