import { bodyTooLarge, toBodyBytes, toBodyInput } from './body';
import type { WebhookBody } from './body';
import { getHeader, SIGNATURE_HEADER } from './headers';
import type { HeadersLike } from './headers';
import { log } from './log';
import { nodeCrypto } from '../internal/hmac';
import { resolveReceiverOptions } from './options';
import type { ResolvedReceiverOptions, WebhookHandlerContextBase, WebhookHandlers, WebhookReceiverOptions } from './options';
import { parseWebhookBody } from './parse';
import type { ParsedWebhookBody } from './parse';
import { checkWithKeys, checkWithKeysAsync, WEBHOOK_SIGNATURE_HEADER } from './schemes/standard-webhooks';
import type { WebhookSecret } from './secret';
import { verifySignature } from './schemes/signature';
import { verifySignatureAsync } from './schemes/signature-async';
import type { SignatureHeader } from './schemes/signature-format';
import { handleInSpan } from './trace';
import { systemClock } from '../clock';
import type { Clock, TimerHandle } from '../clock';
import {
  EventRelayError,
  InvalidArgumentError,
  PayloadTooLargeError,
  SignatureVerificationError,
  TimeoutError,
  WebhookMessageError,
  WebhookTimestampError,
} from '../errors';

/** One request as an adapter hands it to the receiver. */
export interface IncomingWebhook<Context> {
  /**
   * The raw body, or a function that reads it. Reading counts against `timeout`; it may
   * throw `PayloadTooLargeError` (answered 413) or `InvalidArgumentError` (500).
   */
  readonly body: WebhookBody | (() => Promise<WebhookBody>);
  /**
   * The request headers; the signature headers (`X-Signature`, `webhook-*`) are looked up
   * case-insensitively. Anything that cannot be read as headers counts as unsigned (401).
   */
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
   * Reads the body, verifies the signature `scheme` asks for, parses the message (or the batch:
   * a JSON array of them) and runs the handler, all within `timeout`. Resolves with the answer,
   * never rejects: 204 when the handler finished (for every message of a batch), 401 bad or
   * missing signature (or a Standard Webhooks timestamp outside the tolerance), 400 invalid
   * message (or any element of a batch), 413 too large, 500 the handler threw, 503 it did not
   * finish in time. After the 503, the handler is not called and `onError` is not called again.
   */
  receive(incoming: IncomingWebhook<Context>): Promise<WebhookResponse>;
  /** The resolved options, for adapters (body limit, timeout). */
  readonly options: ResolvedReceiverOptions<Context>;
}

/** Test seams and the adapters' choice of crypto; not needed in applications. */
export interface WebhookReceiverInternals {
  readonly clock?: Clock;
  /** X-Signature check; defaults to Node's crypto where there is one, Web Crypto elsewhere. */
  readonly verify?: (rawBody: WebhookBody, signature: SignatureHeader, secret: WebhookSecret) => boolean | Promise<boolean>;
  /** Check Standard Webhooks signatures with Web Crypto even where Node's crypto exists. Default: only where it does not. */
  readonly webCrypto?: boolean;
}

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' } as const;
const NO_CONTENT: WebhookResponse = { status: 204, headers: {}, body: null };
/** What run() returns after the timeout answered: nobody reads it. */
const LATE: WebhookResponse = { status: 503, headers: JSON_HEADERS, body: null };

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
  options: WebhookReceiverOptions<Context> & WebhookHandlers<Context>,
  internals: WebhookReceiverInternals = {},
): WebhookReceiver<Context> {
  const resolved = resolveReceiverOptions(options);
  const clock = internals.clock ?? systemClock;
  const webCrypto = internals.webCrypto ?? !hasNodeCrypto();
  const verify = internals.verify ?? (webCrypto ? verifySignatureAsync : verifySignature);
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
    return { status, headers: JSON_HEADERS, body: JSON.stringify({ error: publicMessage(error, status, resolved) }) };
  }

  /** Why the X-Signature check fails, or undefined when it passes. */
  async function checkXSignature(body: WebhookBody, headers: HeadersLike): Promise<SignatureVerificationError | undefined> {
    const signature = safeHeader(headers, SIGNATURE_HEADER);
    if (await verify(body, signature, resolved.secret)) return undefined;
    const missing = signature === undefined || signature === null || signature === '';
    return new SignatureVerificationError(
      missing
        ? 'The X-Signature header is missing: the sender did not sign the request (is a shared secret set on the destination?).'
        : 'The X-Signature header does not match the body under any configured secret (or is not one 40-digit hex value).',
    );
  }

  function checkStandard(body: WebhookBody, headers: HeadersLike): SignatureVerificationError | undefined | Promise<SignatureVerificationError | undefined> {
    const options = { now: clock.now(), tolerance: resolved.timestampTolerance };
    return webCrypto
      ? checkWithKeysAsync(toBodyBytes(body), headers, resolved.standardKeys, options)
      : checkWithKeys(toBodyInput(body), headers, resolved.standardKeys, options);
  }

  /** Why the request is not signed as `scheme` asks, or undefined when it is. */
  async function authenticate(body: WebhookBody, headers: HeadersLike): Promise<SignatureVerificationError | undefined> {
    switch (resolved.scheme) {
      case 'x-signature':
        return checkXSignature(body, headers);
      case 'standard-webhooks':
        return checkStandard(body, headers);
      case 'either': {
        const signed = safeHeader(headers, WEBHOOK_SIGNATURE_HEADER);
        if (signed === undefined || signed === null) return checkXSignature(body, headers);
        const standard = await checkStandard(body, headers);
        if (standard === undefined) return undefined;
        // A sender on "both" also sent X-Signature: either valid signature is enough in this mode.
        const x = safeHeader(headers, SIGNATURE_HEADER);
        return x !== undefined && x !== null && (await checkXSignature(body, headers)) === undefined ? undefined : standard;
      }
    }
  }

  async function run(incoming: IncomingWebhook<Context>, signal: AbortSignal): Promise<WebhookResponse> {
    // Once the timeout has answered 503, nothing else is reported and the handler never runs.
    const fail = (error: unknown, status: number): WebhookResponse => (signal.aborted ? LATE : refuse(error, status));
    let body: WebhookBody;
    let headers: HeadersLike;
    let context: Context;
    let source: IncomingWebhook<Context>['body'];
    try {
      ({ headers, context, body: source } = incoming);
    } catch (error) {
      return fail(error, 500); // not an IncomingWebhook: a bug in the adapter
    }
    try {
      body = typeof source === 'function' ? await source() : source;
    } catch (error) {
      return fail(error, readFailureStatus(error));
    }
    if (signal.aborted) return LATE;
    let size: number;
    try {
      size = byteLength(body, resolved.maxBodySize);
    } catch (error) {
      return fail(error, 500);
    }
    if (size > resolved.maxBodySize) return fail(bodyTooLarge(size, resolved.maxBodySize), 413);
    let failure: SignatureVerificationError | undefined;
    try {
      failure = await authenticate(body, headers);
    } catch (error) {
      return fail(error, 500);
    }
    if (failure !== undefined) return fail(failure, 401);
    let parsed: ParsedWebhookBody;
    try {
      parsed = parseWebhookBody(body);
    } catch (error) {
      return fail(error, error instanceof WebhookMessageError ? 400 : 500);
    }
    // The 503 went out while reading or verifying: the sender retries, so handling it now would handle it twice.
    if (signal.aborted) {
      log('%s came after the timeout; the handler was not called', what(parsed));
      return LATE;
    }
    try {
      // In a span of the sender's trace when the request carries `traceparent` (and OpenTelemetry is there).
      await handleInSpan(headers, parsed, () => dispatch(parsed, { ...context, signal }));
    } catch (error) {
      if (signal.aborted) {
        log('handler failed after the 503 was sent: %s', describe(error));
        return LATE;
      }
      return refuse(error, 500);
    }
    if (signal.aborted) {
      log('%s: the handler finished after the 503 was sent', what(parsed));
      return LATE;
    }
    log('handled %s (%d bytes)', what(parsed), size);
    return NO_CONTENT;
  }

  /**
   * Hands the messages to the user's code: a batch to `batchHandler` when there is one, else
   * to `handler` one at a time, in order, each awaited. The first that throws ends the batch
   * (the sender retries all of it, with the same bytes); so does the timeout.
   */
  async function dispatch({ batch, messages }: ParsedWebhookBody, context: Context & WebhookHandlerContextBase): Promise<void> {
    const { handler, batchHandler } = resolved;
    if (batchHandler !== undefined && (batch || handler === undefined)) {
      await batchHandler(messages, context);
      return;
    }
    for (let index = 0; index < messages.length; index++) {
      if (context.signal.aborted) return; // answered 503 already: the rest comes again with the retry
      try {
        await handler!(messages[index]!, context);
      } catch (error) {
        if (batch) log('handler threw on message %d of a batch of %d; the rest were not handled', index, messages.length);
        throw error;
      }
    }
  }

  return {
    options: resolved,
    async receive(incoming) {
      const controller = new AbortController();
      let timer: TimerHandle | undefined;
      try {
        const timedOut = new Promise<WebhookResponse>((resolve) => {
          timer = clock.setTimeout(() => {
            const error = new TimeoutError(resolved.timeout);
            resolve(refuse(error, 503));
            controller.abort(error);
          }, resolved.timeout);
        });
        return await Promise.race([run(incoming, controller.signal), timedOut]);
      } catch (error) {
        // Not expected: run() catches what it calls. Kept so that receive() never rejects.
        return controller.signal.aborted ? LATE : refuse(error, 500);
      } finally {
        clock.clearTimeout(timer);
      }
    },
  };
}

/** For log lines: what a body held, never its content. */
function what({ batch, messages }: ParsedWebhookBody): string {
  return batch ? `a batch of ${messages.length} messages` : `a ${messages[0]!.type} message`;
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
function publicMessage(error: unknown, status: number, options: { readonly scheme: string; readonly maxBodySize: number }): string {
  switch (status) {
    case 400:
      return error instanceof WebhookMessageError ? error.message : 'The request body could not be read.';
    case 401:
      if (error instanceof WebhookTimestampError) return 'The webhook-timestamp is outside the tolerance.';
      return options.scheme === 'x-signature' ? 'Invalid or missing X-Signature.' : 'Invalid or missing signature.';
    case 413:
      return `The body is larger than ${options.maxBodySize} bytes.`;
    case 503:
      return 'The handler did not finish in time; retry later.';
    default:
      return 'Internal error.';
  }
}

/** A header, or undefined when the header object cannot be read (a getter that throws, null). */
function safeHeader(headers: HeadersLike, name: string): SignatureHeader {
  try {
    return getHeader(headers, name);
  } catch {
    return undefined;
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
