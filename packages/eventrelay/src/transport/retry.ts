import { EventRelayError, HttpError, NetworkError } from '../errors';
import type { Clock } from '../clock';
import { backoffDelay, parseRetryAfter } from './backoff';
import { toNetworkError } from './network-errors';
import { redactUrl } from './redact';
import type { HttpRequest, HttpResponse, Transport } from './transport';

export interface RetryPolicy {
  /** Retries after the first attempt. */
  readonly maxRetries: number;
  readonly minRetryDelay: number;
  readonly maxRetryDelay: number;
}

export interface SendContext {
  readonly transport: Transport;
  readonly clock: Clock;
  readonly random: () => number;
  readonly policy: RetryPolicy;
  /** Called before each retry, for logging. */
  readonly onRetry?: (attempt: number, delay: number, error: EventRelayError) => void;
  /** When it returns true, no further attempt is made (the client gave up at its close timeout). */
  readonly stopped?: () => boolean;
}

/** How a request ended: the 2xx answer, or the error that ended the retries. */
export type SendOutcome = { readonly ok: true; readonly response: HttpResponse } | { readonly ok: false; readonly error: EventRelayError };

/** 408, 429 and 5xx may succeed later; every other non-2xx status is final. */
export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 429 || status === 408;
}

/**
 * Reason phrases of the statuses an ingestion endpoint or a proxy in front of it answers, for
 * error messages (`answered 503 (Service Unavailable)`); a table of its own, since `node:http`'s
 * is not there on every runtime.
 */
const STATUS_TEXT: Readonly<Record<number, string>> = {
  300: 'Multiple Choices', 301: 'Moved Permanently', 302: 'Found', 303: 'See Other', 304: 'Not Modified',
  307: 'Temporary Redirect', 308: 'Permanent Redirect',
  400: 'Bad Request', 401: 'Unauthorized', 402: 'Payment Required', 403: 'Forbidden', 404: 'Not Found',
  405: 'Method Not Allowed', 406: 'Not Acceptable', 407: 'Proxy Authentication Required', 408: 'Request Timeout',
  409: 'Conflict', 410: 'Gone', 411: 'Length Required', 412: 'Precondition Failed', 413: 'Payload Too Large',
  414: 'URI Too Long', 415: 'Unsupported Media Type', 416: 'Range Not Satisfiable', 417: 'Expectation Failed',
  418: "I'm a Teapot", 421: 'Misdirected Request', 422: 'Unprocessable Entity', 423: 'Locked', 424: 'Failed Dependency',
  425: 'Too Early', 426: 'Upgrade Required', 428: 'Precondition Required', 429: 'Too Many Requests',
  431: 'Request Header Fields Too Large', 451: 'Unavailable For Legal Reasons',
  500: 'Internal Server Error', 501: 'Not Implemented', 502: 'Bad Gateway', 503: 'Service Unavailable',
  504: 'Gateway Timeout', 505: 'HTTP Version Not Supported', 506: 'Variant Also Negotiates', 507: 'Insufficient Storage',
  508: 'Loop Detected', 509: 'Bandwidth Limit Exceeded', 510: 'Not Extended', 511: 'Network Authentication Required',
};

function statusError(status: number, url: URL, retryAfter: number | undefined): HttpError {
  const hint = status === 401 || status === 403 ? ': check the write key' : '';
  const text = STATUS_TEXT[status] ?? 'Unknown';
  return new HttpError(`${redactUrl(url)} answered ${status} (${text})${hint}`, status, isRetryableStatus(status), retryAfter);
}

function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

/**
 * POSTs the same request until it gets a 2xx, a final answer, or runs out of retries.
 * Resolves with the 2xx answer, or with the error that ended it; never rejects.
 */
export async function sendWithRetries(request: HttpRequest, context: SendContext): Promise<SendOutcome> {
  for (let attempt = 0; ; attempt++) {
    let error: EventRelayError;
    let retryable: boolean;
    let retryAfter: number | undefined;
    try {
      const response = await context.transport.send(request);
      if (response.status >= 200 && response.status < 300) return { ok: true, response };
      retryAfter = parseRetryAfter(response.retryAfter, context.clock.now());
      const httpError = statusError(response.status, request.url, retryAfter);
      error = httpError;
      retryable = httpError.retryable;
    } catch (thrown) {
      error = thrown instanceof EventRelayError ? thrown : toNetworkError(thrown, redactUrl(request.url));
      retryable = error instanceof NetworkError && error.retryable;
    }
    if (!retryable || attempt >= context.policy.maxRetries || context.stopped?.() === true) return { ok: false, error };
    const delay = backoffDelay(
      attempt + 1,
      { minDelay: context.policy.minRetryDelay, maxDelay: context.policy.maxRetryDelay },
      context.random,
      retryAfter,
    );
    context.onRetry?.(attempt + 1, delay, error);
    await sleep(context.clock, delay);
    if (context.stopped?.() === true) return { ok: false, error };
  }
}
