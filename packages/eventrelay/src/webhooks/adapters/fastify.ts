import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { WebhookReceiverOptions } from '../options';
import { createWebhookReceiver } from '../receiver';

/** The parts of a Fastify request the adapter uses (declared here so fastify stays optional). */
export interface FastifyRequestLike {
  readonly headers: IncomingHttpHeaders;
  readonly body?: unknown;
  readonly raw: IncomingMessage;
}

/** The parts of a Fastify reply the adapter uses. */
export interface FastifyReplyLike {
  code(statusCode: number): FastifyReplyLike;
  headers(values: Record<string, string>): FastifyReplyLike;
  send(payload?: unknown): FastifyReplyLike;
}

/** The parts of a Fastify instance the plugin uses. */
export interface FastifyInstanceLike {
  removeAllContentTypeParsers(): void;
  addContentTypeParser(
    contentType: string,
    options: { parseAs: 'buffer'; bodyLimit?: number },
    parser: (request: never, body: Buffer, done: (error: Error | null, body?: unknown) => void) => void,
  ): void;
  post(path: string, handler: (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<unknown>): unknown;
}

/** What the handler of the Fastify adapter gets besides the message. */
export interface FastifyWebhookContext {
  readonly request: FastifyRequestLike;
  readonly reply: FastifyReplyLike;
}

export interface FastifyWebhookOptions extends WebhookReceiverOptions<FastifyWebhookContext> {
  /** Route path inside the plugin's prefix. Default `/`. */
  readonly path?: string;
}

const EMPTY = new Uint8Array(0);

/**
 * A Fastify plugin that adds one POST route whose body is kept as the raw Buffer: register
 * it with `app.register(fastifyWebhook, { prefix: '/webhooks', secret, handler })`. Fastify
 * scopes the plugin's content-type parsers to the plugin, so the app's other routes still
 * parse JSON as usual. Bodies over `maxBodySize` are refused with 413 by Fastify itself.
 * Throws `ConfigError` for bad options when the plugin loads.
 */
export async function fastifyWebhook(instance: FastifyInstanceLike, options: FastifyWebhookOptions): Promise<void> {
  const receiver = createWebhookReceiver(options);
  instance.removeAllContentTypeParsers();
  instance.addContentTypeParser(
    '*',
    { parseAs: 'buffer', bodyLimit: receiver.options.maxBodySize },
    (_request, body, done) => done(null, body),
  );
  instance.post(options.path ?? '/', async (request, reply) => {
    const body = request.body instanceof Uint8Array ? request.body : EMPTY;
    const answer = await receiver.receive({ body, headers: request.headers, context: { request, reply } });
    return reply.code(answer.status).headers(answer.headers).send(answer.body ?? undefined);
  });
}
