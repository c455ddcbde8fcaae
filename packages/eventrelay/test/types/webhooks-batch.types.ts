// Compile-time tests (issue 45): `npm run typecheck` fails if a line marked @ts-expect-error compiles.
import Fastify from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  createFetchHandler,
  createWebhookHandler,
  createWebhookReceiver,
  fastifyWebhook,
  parseWebhookMessages,
  webhookMiddleware,
  type FastifyReplyLike,
  type WebhookBatchHandler,
  type WebhookMessage,
} from '../../src/webhooks/index';

const secret = 's';

// Each adapter types batchHandler's context as it types handler's.
createWebhookHandler({
  secret,
  batchHandler: (messages, context) => {
    const first: WebhookMessage | undefined = messages[0];
    const request: IncomingMessage = context.request;
    const response: ServerResponse = context.response;
    const signal: AbortSignal = context.signal;
    void [first, request, response, signal];
  },
});
webhookMiddleware({ secret, batchHandler: (messages, context) => void [messages.length, context.response.statusCode] });
createFetchHandler({ secret, batchHandler: async (messages, context) => void [messages.map((m) => m.type), context.request.url] });
void Fastify().register(fastifyWebhook, {
  secret,
  prefix: '/webhooks',
  batchHandler: (messages, context) => {
    const reply: FastifyReplyLike = context.reply;
    void [messages, reply, context.request.headers];
  },
});
// Both: batches to batchHandler, single messages to handler.
createWebhookHandler({ secret, handler: (message) => void message.type, batchHandler: (messages) => void messages });
createWebhookReceiver({ secret, batchHandler: (messages) => void messages.length });

const typed: WebhookBatchHandler<{ request: Request }> = (messages, context) => void [messages, context.request, context.signal];
void typed;
const parsed: WebhookMessage[] = parseWebhookMessages('[]');
void parsed;

// @ts-expect-error: neither handler nor batchHandler
createWebhookHandler({ secret });
// @ts-expect-error: neither handler nor batchHandler
createFetchHandler({ secret, timeout: 1000 });
// @ts-expect-error: batchHandler takes the messages, not one message
createWebhookHandler({ secret, batchHandler: (message: WebhookMessage) => void message });
// @ts-expect-error: the Fetch adapter's context has no response
createFetchHandler({ secret, batchHandler: (_messages, context) => void context.response });
// @ts-expect-error: neither handler nor batchHandler
webhookMiddleware({ secret });
// @ts-expect-error: neither handler nor batchHandler
void Fastify().register(fastifyWebhook, { secret, prefix: '/webhooks' });
// @ts-expect-error: neither handler nor batchHandler
createWebhookReceiver({ secret });
