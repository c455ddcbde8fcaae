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
