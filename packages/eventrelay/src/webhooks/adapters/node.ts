import type { IncomingMessage, ServerResponse } from 'node:http';
import { readNodeBody, writeNodeResponse } from './node-body';
import type { WebhookHandlers, WebhookReceiverOptions } from '../options';
import { log } from '../log';
import { createWebhookReceiver, METHOD_NOT_ALLOWED } from '../receiver';

/** What the handler of the Node and Express adapters gets besides the message. */
export interface NodeWebhookContext {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
}

/** The receiver's options, with `handler` and/or `batchHandler` getting the Node context. */
export type NodeWebhookOptions = WebhookReceiverOptions<NodeWebhookContext> & WebhookHandlers<NodeWebhookContext>;

/**
 * A `(request, response)` listener for Node's `http`/`https` servers (or your own router):
 * reads the raw body, verifies, parses, calls `options.handler` (per message) or
 * `options.batchHandler` (per batch), answers. Answers 405 to
 * anything but POST. The returned promise never rejects. Throws `ConfigError` for bad options.
 */
export function createWebhookHandler(
  options: NodeWebhookOptions,
): (request: IncomingMessage, response: ServerResponse) => Promise<void> {
  const receiver = createWebhookReceiver(options);
  const limit = receiver.options.maxBodySize;
  return async (request, response) => {
    if (request.method !== 'POST') {
      writeNodeResponse(request, response, METHOD_NOT_ALLOWED);
      return;
    }
    const answer = await receiver.receive({
      body: () => readNodeBody(request, limit),
      headers: request.headers,
      context: { request, response },
    });
    try {
      writeNodeResponse(request, response, answer);
    } catch (error) {
      // The handler broke the response (wrote part of it, replaced a method): nothing valid can be sent now.
      log('could not write the %d answer: %s', answer.status, error instanceof Error ? error.name : typeof error);
      response.destroy();
    }
  };
}
