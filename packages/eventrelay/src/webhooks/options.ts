import { assertSecret } from './secret';
import type { WebhookSecret } from './secret';
import type { WebhookMessage } from './message-types';
import { standardWebhookKeys } from './schemes/standard-webhooks';
import { ConfigError } from '../errors';
import { durationOption, enumOption, functionOption, integerOption, objectOption } from '../internal/options';
import { describeValue } from '../internal/values';

/** What every handler gets besides the message. */
export interface WebhookHandlerContextBase {
  /**
   * Aborted when the adapter gives up waiting (see `timeout`) and has answered 503: stop
   * work that would be wasted, the sender will retry the message.
   */
  readonly signal: AbortSignal;
}

/**
 * Your code: called once per verified, valid message. Return (or resolve) to answer 204;
 * throw (or reject) to answer 500, so that the sender retries. For a batch (a body that is a
 * JSON array) it is called once per message, in order, each call awaited before the next.
 */
export type WebhookHandler<Context> = (
  message: WebhookMessage,
  context: Context & WebhookHandlerContextBase,
) => unknown;

/**
 * Your code for a whole batch: called once with every message of a verified, valid batch, in
 * the order sent (never empty). Return (or resolve) to answer 204; throw (or reject) to answer
 * 500, and the sender retries the same batch, byte for byte.
 */
export type WebhookBatchHandler<Context> = (
  messages: WebhookMessage[],
  context: Context & WebhookHandlerContextBase,
) => unknown;

export interface WebhookReceiverOptions<Context> {
  /**
   * The shared secret of the Webhooks destination; an array while rotating (a signature made
   * with any one of them passes). Required, non-empty.
   */
  readonly secret: WebhookSecret;
  /**
   * Called with each verified, parsed message; for a batch, once per message in order. If it
   * throws on one, the rest are not called and the answer is 500: the sender then retries the
   * whole batch, so the messages before it come again (deduplicate on `messageId`). Required
   * unless `batchHandler` is given.
   */
  readonly handler?: WebhookHandler<Context>;
  /**
   * Called once per batch (a body that is a JSON array) with all its messages, instead of
   * `handler`; a single-message body goes to `handler`, or here as an array of one when there
   * is no `handler`. Default: none.
   */
  readonly batchHandler?: WebhookBatchHandler<Context>;
  /**
   * Which signature to require: `x-signature` (the spec's hex HMAC-SHA1 of the body, default),
   * `standard-webhooks` (`webhook-id`, `webhook-timestamp`, `webhook-signature`: replays outside
   * `timestampTolerance` are refused), or `either` (while a sender moves from one to the other;
   * a request passes with either valid signature, so it protects no better than `x-signature`).
   */
  readonly scheme?: WebhookScheme;
  /**
   * Standard Webhooks only: how far `webhook-timestamp` may be from the receiver's clock, either
   * way, in milliseconds. Default 300000 (5 minutes, the standard's value).
   */
  readonly timestampTolerance?: number;
  /**
   * Milliseconds from the request's arrival until the adapter stops waiting for your handler,
   * answers 503 (the sender retries) and aborts `context.signal`. Default 4000: the sender
   * gives up after 5 s, and a late 2xx would count as a timeout there anyway.
   */
  readonly timeout?: number;
  /** Largest body accepted, in bytes; a larger one is answered 413 unread. Default 1 MiB (1048576). */
  readonly maxBodySize?: number;
  /**
   * Called with the reason for every request not answered 2xx and its status:
   * `SignatureVerificationError` (401), `WebhookMessageError` (400), `PayloadTooLargeError`
   * (413), your handler's error (500), `TimeoutError` (503), `InvalidArgumentError` (500, the
   * body was consumed before the adapter got it). Default: log with `DEBUG=analytics:webhooks`.
   */
  readonly onError?: (error: unknown, status: number) => void;
}

/** The signature schemes a receiver can require. */
export type WebhookScheme = 'x-signature' | 'standard-webhooks' | 'either';

const SCHEMES: readonly WebhookScheme[] = ['x-signature', 'standard-webhooks', 'either'];

export const WEBHOOK_DEFAULTS = {
  timeout: 4000,
  maxBodySize: 1024 * 1024,
  scheme: 'x-signature',
  timestampTolerance: 5 * 60 * 1000,
} as const;

/**
 * `handler`, `batchHandler` or both: the adapters take `WebhookReceiverOptions & WebhookHandlers`,
 * so that leaving both out is a compile error (and a `ConfigError` at run time).
 */
export type WebhookHandlers<Context> =
  | { readonly handler: WebhookHandler<Context>; readonly batchHandler?: WebhookBatchHandler<Context> }
  | { readonly handler?: WebhookHandler<Context>; readonly batchHandler: WebhookBatchHandler<Context> };

export interface ResolvedReceiverOptions<Context> {
  readonly secret: WebhookSecret;
  readonly handler: WebhookHandler<Context> | undefined;
  readonly batchHandler: WebhookBatchHandler<Context> | undefined;
  readonly timeout: number;
  readonly maxBodySize: number;
  readonly scheme: WebhookScheme;
  readonly timestampTolerance: number;
  /** Standard Webhooks key bytes of each secret, decoded once (empty for `x-signature`). */
  readonly standardKeys: readonly Uint8Array[];
  readonly onError: ((error: unknown, status: number) => void) | undefined;
}

/** Checks the options once, at setup, and fills in the defaults. Throws `ConfigError`. */
export function resolveReceiverOptions<Context>(options: WebhookReceiverOptions<Context>): ResolvedReceiverOptions<Context> {
  objectOption('', options, 'an object with `secret` and `handler`');
  assertSecret(options.secret);
  const batchHandler = functionOption('batchHandler', options.batchHandler, '(messages, context) => void');
  if (typeof options.handler !== 'function' && (options.handler !== undefined || batchHandler === undefined)) {
    const or = batchHandler === undefined && options.handler === undefined ? ' (or `batchHandler`, for batches)' : '';
    throw new ConfigError(`Expected \`handler\`${or} to be a function (message, context) => void, got ${describeValue(options.handler)}`, 'handler');
  }
  const scheme = enumOption<WebhookScheme>('scheme', options.scheme ?? WEBHOOK_DEFAULTS.scheme, SCHEMES);
  return {
    secret: options.secret,
    handler: options.handler,
    batchHandler,
    timeout: durationOption('timeout', options.timeout ?? WEBHOOK_DEFAULTS.timeout, 1),
    maxBodySize: integerOption('maxBodySize', options.maxBodySize ?? WEBHOOK_DEFAULTS.maxBodySize, 1),
    scheme,
    timestampTolerance: durationOption('timestampTolerance', options.timestampTolerance ?? WEBHOOK_DEFAULTS.timestampTolerance, 0, Number.MAX_SAFE_INTEGER),
    standardKeys: scheme === 'x-signature' ? [] : standardWebhookKeys(options.secret),
    onError: functionOption('onError', options.onError, '(error, status) => void'),
  };
}
