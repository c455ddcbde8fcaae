import { bodyTooLarge } from './body';
import type { WebhookBody } from './body';
import { getHeader, SIGNATURE_HEADER } from './headers';
import type { HeadersLike } from './headers';
import { log } from './log';
import type { WebhookMessage } from './message-types';
import { nodeCrypto } from './node-crypto';
import { resolveReceiverOptions } from './options';
import type { ResolvedReceiverOptions, WebhookReceiverOptions } from './options';
import { parseWebhookMessage } from './parse';
import type { WebhookSecret } from './secret';
import { verifySignature } from './signature';
import { verifySignatureAsync } from './signature-async';
import type { SignatureHeader } from './signature-format';
import { systemClock } from '../clock';
import type { Clock, TimerHandle } from '../clock';
import {
  EventRelayError,
  InvalidArgumentError,
  PayloadTooLargeError,
  SignatureVerificationError,
  TimeoutError,
  WebhookMessageError,
} from '../errors';

/** One request as an adapter hands it to the receiver. */
export interface IncomingWebhook<Context> {
  /**
   * The raw body, or a function that reads it. Reading counts against `timeout`; it may
   * throw `PayloadTooLargeError` (answered 413) or `InvalidArgumentError` (500).
   */
  readonly body: WebhookBody | (() => Promise<WebhookBody>);
  /** The request headers; `X-Signature` is looked up case-insensitively. */
  readonly headers: HeadersLike;
  /** Passed to the handler, with `signal` added. */
  readonly context: Context;
}

/** The answer to send; adapters copy it onto their response type. */
export interface WebhookResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** JSON text, or null for 204. */
  readonly body: string | null;
}

export interface WebhookReceiver<Context> {
  /**
   * Reads the body, verifies `X-Signature`, parses the message and runs the handler, all
   * within `timeout`. Resolves with the answer, never rejects: 204 when the handler finished,
   * 401 bad or missing signature, 400 invalid message, 413 too large, 500 the handler threw,
   * 503 it did not finish in time.
   */
  receive(incoming: IncomingWebhook<Context>): Promise<WebhookResponse>;
  /** The resolved options, for adapters (body limit, timeout). */
  readonly options: ResolvedReceiverOptions<Context>;
}

/** Test seams and the adapters' choice of crypto; not needed in applications. */
export interface WebhookReceiverInternals {
  readonly clock?: Clock;
  /** Signature check; defaults to Node's crypto where there is one, Web Crypto elsewhere. */
  readonly verify?: (rawBody: WebhookBody, signature: SignatureHeader, secret: WebhookSecret) => boolean | Promise<boolean>;
}

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' } as const;
const NO_CONTENT: WebhookResponse = { status: 204, headers: {}, body: null };

/** The answer to anything but POST. */
export const METHOD_NOT_ALLOWED: WebhookResponse = {
  status: 405,
  headers: { ...JSON_HEADERS, allow: 'POST' },
  body: JSON.stringify({ error: 'Webhooks are delivered with POST.' }),
};
const encoder = new TextEncoder();

/**
 * The runtime-neutral core behind every adapter: verify + parse + handler → status. Use it
 * to write an adapter for another framework: give it the raw body and the headers, send
 * back what it returns. Throws `ConfigError` at once for bad options.
 */
export function createWebhookReceiver<Context = Record<never, never>>(
  options: WebhookReceiverOptions<Context>,
  internals: WebhookReceiverInternals = {},
): WebhookReceiver<Context> {
  const resolved = resolveReceiverOptions(options);
  const clock = internals.clock ?? systemClock;
  const verify = internals.verify ?? (hasNodeCrypto() ? verifySignature : verifySignatureAsync);
  let warned = false;

  function refuse(error: unknown, status: number): WebhookResponse {
    log('refused with %d: %s', status, describe(error));
    if (resolved.onError) {
      try {
        resolved.onError(error, status);
      } catch (hookError) {
        log('onError threw: %s', describe(hookError));
      }
    } else if (!warned && error instanceof InvalidArgumentError) {
      // A setup mistake (the body was consumed before the adapter ran) should not hide in DEBUG.
      warned = true;
      globalThis.process?.emitWarning?.(error.message, { code: error.code });
    }
    return { status, headers: JSON_HEADERS, body: JSON.stringify({ error: publicMessage(error, status, resolved.maxBodySize) }) };
  }

  async function run(incoming: IncomingWebhook<Context>, signal: AbortSignal): Promise<WebhookResponse> {
    let body: WebhookBody;
    try {
      body = typeof incoming.body === 'function' ? await incoming.body() : incoming.body;
    } catch (error) {
      return refuse(error, readFailureStatus(error));
    }
    const size = byteLength(body, resolved.maxBodySize);
    if (size > resolved.maxBodySize) return refuse(bodyTooLarge(size, resolved.maxBodySize), 413);
    const signature = getHeader(incoming.headers, SIGNATURE_HEADER);
    let valid: boolean;
    try {
      valid = await verify(body, signature, resolved.secret);
    } catch (error) {
      return refuse(error, 500);
    }
    if (!valid) {
      const missing = signature === undefined || signature === null || signature === '';
      return refuse(
        new SignatureVerificationError(
          missing
            ? 'The X-Signature header is missing: the sender did not sign the request (is a shared secret set on the destination?).'
            : 'The X-Signature header does not match the body under any configured secret (or is not one 40-digit hex value).',
        ),
        401,
      );
    }
    let message: WebhookMessage;
    try {
      message = parseWebhookMessage(body);
    } catch (error) {
      return refuse(error, error instanceof WebhookMessageError ? 400 : 500);
    }
    try {
      await resolved.handler(message, { ...incoming.context, signal });
    } catch (error) {
      if (signal.aborted) {
        log('handler failed after the 503 was sent: %s', describe(error));
        return NO_CONTENT; // nobody reads this: the timeout already answered
      }
      return refuse(error, 500);
    }
    log('handled a %s message (%d bytes)', message.type, size);
    return NO_CONTENT;
  }

  return {
    options: resolved,
    async receive(incoming) {
      const controller = new AbortController();
      let timer: TimerHandle | undefined;
      const timedOut = new Promise<WebhookResponse>((resolve) => {
        timer = clock.setTimeout(() => {
          const error = new TimeoutError(resolved.timeout);
          controller.abort(error);
          resolve(refuse(error, 503));
        }, resolved.timeout);
      });
      try {
        return await Promise.race([run(incoming, controller.signal), timedOut]);
      } finally {
        clock.clearTimeout(timer);
      }
    },
  };
}

function hasNodeCrypto(): boolean {
  try {
    nodeCrypto();
    return true;
  } catch {
    return false;
  }
}

function readFailureStatus(error: unknown): number {
  if (error instanceof PayloadTooLargeError) return 413;
  if (error instanceof InvalidArgumentError) return 500;
  return 400; // the client went away or sent a broken body
}

/** UTF-8 size of the body; for a string, counted only when it could be over `limit`. */
function byteLength(body: WebhookBody, limit: number): number {
  if (typeof body !== 'string') return body.byteLength;
  // Each UTF-16 unit takes at most 3 bytes in UTF-8; skip the encode when that fits anyway.
  return body.length * 3 <= limit ? body.length : encoder.encode(body).byteLength;
}

/** What the sender gets to read: never the handler's own error text, never a body. */
function publicMessage(error: unknown, status: number, maxBodySize: number): string {
  switch (status) {
    case 400:
      return error instanceof WebhookMessageError ? error.message : 'The request body could not be read.';
    case 401:
      return 'Invalid or missing X-Signature.';
    case 413:
      return `The body is larger than ${maxBodySize} bytes.`;
    case 503:
      return 'The handler did not finish in time; retry later.';
    default:
      return 'Internal error.';
  }
}

/** For log lines: the error's name and code, plus its message only for eventrelay's own errors. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  const code = (error as { code?: unknown }).code;
  // Our messages are written to carry no secrets or bodies; a handler's may carry anything.
  const own = error instanceof EventRelayError;
  return `${error.name}${typeof code === 'string' ? ` (${code})` : ''}${own ? `: ${error.message}` : ''}`;
}
