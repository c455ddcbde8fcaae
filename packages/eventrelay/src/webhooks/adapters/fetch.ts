import { bodyTooLarge } from '../body';
import type { WebhookHandlers, WebhookReceiverOptions } from '../options';
import { createWebhookReceiver, METHOD_NOT_ALLOWED } from '../receiver';
import type { WebhookResponse } from '../receiver';
import { verifySignatureAsync } from '../schemes/signature-async';
import { InvalidArgumentError } from '../../errors';

/** What the handler of the Fetch adapter gets besides the message. */
export interface FetchWebhookContext {
  readonly request: Request;
}

/** The receiver's options, with `handler` and/or `batchHandler` getting the Fetch context. */
export type FetchWebhookOptions = WebhookReceiverOptions<FetchWebhookContext> & WebhookHandlers<FetchWebhookContext>;

/**
 * A `(request: Request) => Promise<Response>` handler for Fetch-style runtimes: Next.js
 * route handlers (`export const POST = createFetchHandler({...})`, Node or Edge runtime), Hono
 * and the like. Verifies with Web Crypto, so it runs without `node:crypto` too (tested in the
 * Edge runtime of the `edge-runtime` package). Answers 405 to
 * anything but POST. Never rejects. Throws `ConfigError` for bad options.
 */
export function createFetchHandler(options: FetchWebhookOptions): (request: Request) => Promise<Response> {
  const receiver = createWebhookReceiver(options, { verify: verifySignatureAsync, webCrypto: true });
  const limit = receiver.options.maxBodySize;
  return async (request) => {
    if (request.method !== 'POST') return toResponse(METHOD_NOT_ALLOWED);
    const answer = await receiver.receive({
      body: () => readFetchBody(request, limit),
      headers: request.headers,
      context: { request },
    });
    return toResponse(answer);
  };
}

/** One-off form of `createFetchHandler`: handles `request` with `options`. */
export function handleWebhookRequest(request: Request, options: FetchWebhookOptions): Promise<Response> {
  return createFetchHandler(options)(request);
}

/** Reads the body stream, stopping (and cancelling it) as soon as it passes `limit`. */
async function readFetchBody(request: Request, limit: number): Promise<Uint8Array> {
  if (request.bodyUsed) {
    throw new InvalidArgumentError(
      'The Request body was already read (request.json() or request.text() was called) before the ' +
      'webhook handler got it. Pass the request untouched, or check the text you read with ' +
      "verifySignatureAsync(text, request.headers.get('x-signature'), secret).",
      'request',
    );
  }
  const declared = Number(request.headers.get('content-length'));
  if (declared > limit) throw bodyTooLarge(declared, limit);
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      reader.cancel().catch(() => {});
      throw bodyTooLarge(size, limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

function toResponse(answer: WebhookResponse): Response {
  return new Response(answer.body, { status: answer.status, headers: answer.headers });
}
