import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { readNodeBody } from './node-body';
import { bodyTooLarge } from '../body';
import type { WebhookHandlers, WebhookReceiverOptions } from '../options';
import { createWebhookReceiver } from '../receiver';
import { NetworkError, PayloadTooLargeError } from '../../errors';

/** The parts of a Fastify request the adapter uses (declared here so fastify stays optional). */
export interface FastifyRequestLike {
  readonly headers: IncomingHttpHeaders;
  body?: unknown;
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
    options: { bodyLimit?: number },
    parser: (request: never, payload: NodeJS.ReadableStream, done: (error: Error | null, body?: unknown) => void) => void,
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

/** What the plugin's content-type parser leaves in `request.body`: the stream to read, unread. */
class Unread {
  constructor(readonly payload: NodeJS.ReadableStream) {}
}

/**
 * A Fastify plugin that adds one POST route and reads its raw body itself: register it with
 * `app.register(fastifyWebhook, { prefix: '/webhooks', secret, handler })`. Fastify scopes the
 * plugin's content-type parser to the plugin, so the app's other routes still parse JSON as
 * usual. As in the other adapters, reading the body counts against `timeout` (a body still
 * arriving then gets 503) and a body over `maxBodySize` gets 413, both reported to `onError`.
 * The handler finds the body's bytes in `context.request.body` (a Buffer). Throws `ConfigError`
 * for bad options when the plugin loads.
 */
export async function fastifyWebhook(
  instance: FastifyInstanceLike,
  options: FastifyWebhookOptions & WebhookHandlers<FastifyWebhookContext>,
): Promise<void> {
  const receiver = createWebhookReceiver(options);
  const limit = receiver.options.maxBodySize;
  instance.removeAllContentTypeParsers();
  // Any content type; the body is read in the route, within the receiver's timeout (and maxBodySize).
  instance.addContentTypeParser('*', {}, (_request, payload, done) => done(null, new Unread(payload)));
  instance.post(options.path ?? '/', async (request, reply) => {
    const unread = request.body instanceof Unread ? request.body : undefined;
    const read = async (from: Unread): Promise<Buffer> => {
      // The request itself, or what a preParsing hook made of it (a decompressor, say).
      const bytes = from.payload === request.raw ? await readNodeBody(request.raw, limit) : await readStream(from.payload, limit);
      request.body = bytes;
      return bytes;
    };
    const body = unread === undefined ? EMPTY : () => read(unread);
    const answer = await receiver.receive({ body, headers: request.headers, context: { request, reply } });
    // Answered before the body was all there (413 unread, 503 while it arrives): close rather than read the rest.
    const headers = request.raw.complete ? answer.headers : { ...answer.headers, connection: 'close' };
    return reply.code(answer.status).headers(headers).send(answer.body ?? undefined);
  });
}

/** Reads a stream other than the request (from a preParsing hook), stopping once it passes `limit`. */
async function readStream(stream: NodeJS.ReadableStream, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      size += bytes.length;
      if (size > limit) throw bodyTooLarge(size, limit); // leaving the loop destroys the stream
      chunks.push(bytes);
    }
  } catch (error) {
    if (error instanceof PayloadTooLargeError) throw error;
    throw new NetworkError('The request body could not be read.', { cause: error, code: 'ERR_BODY_READ' });
  }
  return Buffer.concat(chunks, size);
}
