import { EventRelayError, HttpError, NetworkError } from '../errors';
import type { Clock } from '../clock';
import { backoffDelay, parseRetryAfter } from './backoff';
import { toNetworkError } from './network-errors';
import { redactUrl } from './redact';
import { statusText } from './status-text';
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

function statusError(status: number, url: URL, retryAfter: number | undefined): HttpError {
  const hint = status === 401 || status === 403 ? ': check the write key' : '';
  const text = statusText(status) ?? 'Unknown';
  return new HttpError(`${redactUrl(url)} answered ${status} (${text})${hint}`, status, isRetryableStatus(status), retryAfter);
}

function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

/**
 * POSTs the same request until it gets a 2xx, a final answer, or runs out of retries.
 * Resolves with the 2xx answer, or with the error that ended it; never rejects.
 *
 * An answer is judged in the same turn whatever it is; only a retry waits in an async loop: a
 * batch delivered or refused at once (nearly all of them) runs, and makes V8 compile, the least code.
 */
export function sendWithRetries(request: HttpRequest, context: SendContext): Promise<SendOutcome> {
  return attempt(request, context, 0);
}

/** Attempt number `done` + 1, judged in the turn its answer comes. Never rejects. */
function attempt(request: HttpRequest, context: SendContext, done: number): Promise<SendOutcome> {
  let sent: Promise<HttpResponse>;
  try {
    sent = context.transport.send(request);
  } catch (thrown) {
    return Promise.resolve(judge(request, context, { thrown }, done));
  }
  return sent.then(
    (response) => judge(request, context, { response }, done),
    (thrown: unknown) => judge(request, context, { thrown }, done),
  );
}

/** How one attempt ended: the transport's answer, or what it threw or rejected with. */
type Attempt = { readonly response: HttpResponse; readonly thrown?: undefined } | { readonly response?: undefined; readonly thrown: unknown };

/** The outcome of attempt number `done` + 1 when it is final; else the retry that follows it. */
function judge(request: HttpRequest, context: SendContext, last: Attempt, done: number): SendOutcome | Promise<SendOutcome> {
  let error: EventRelayError;
  let retryable: boolean;
  let retryAfter: number | undefined;
  const { response } = last;
  if (response !== undefined) {
    if (response.status >= 200 && response.status < 300) return { ok: true, response };
    retryAfter = parseRetryAfter(response.retryAfter, context.clock.now());
    const httpError = statusError(response.status, request.url, retryAfter);
    error = httpError;
    retryable = httpError.retryable;
  } else {
    const { thrown } = last;
    error = thrown instanceof EventRelayError ? thrown : toNetworkError(thrown, redactUrl(request.url));
    retryable = error instanceof NetworkError && error.retryable;
  }
  if (!retryable || done >= context.policy.maxRetries || context.stopped?.() === true) return { ok: false, error };
  return retryLater(request, context, error, retryAfter, done + 1);
}

/** Waits the backoff before retry number `retry`, then makes it. */
async function retryLater(
  request: HttpRequest,
  context: SendContext,
  error: EventRelayError,
  retryAfter: number | undefined,
  retry: number,
): Promise<SendOutcome> {
  const delay = backoffDelay(retry, { minDelay: context.policy.minRetryDelay, maxDelay: context.policy.maxRetryDelay }, context.random, retryAfter);
  context.onRetry?.(retry, delay, error);
  await sleep(context.clock, delay);
  if (context.stopped?.() === true) return { ok: false, error };
  return attempt(request, context, retry);
}
