import type { Clock } from '../clock';
import type { EventRelayError } from '../errors';
import type { WebhookMessage } from './webhook-message';

/** One configured webhook (spec 2.1). */
export interface WebhookEntry {
  /** Full http or https URL. Credentials in it (`user:pass@`) are sent as Basic auth and never logged. */
  readonly url: string;
  /** Static headers added to every request to this URL. */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface WebhookDestinationOptions {
  /** 1 to 5 webhooks; every message goes to all of them. */
  readonly webhooks: readonly WebhookEntry[];
  /** When set (non-empty), every request carries `X-Signature`: hex HMAC-SHA1 of the body. */
  readonly sharedSecret?: string;
  /** Time a receiver has to answer, in milliseconds. Default 5000 (spec 8). */
  readonly timeout?: number;
  /** How long after the first attempt retries may happen, in milliseconds. Default 4 h (spec 8). */
  readonly retryWindow?: number;
  /** Base delay of the first retry, in milliseconds. Default 1000. */
  readonly minRetryDelay?: number;
  /** Largest delay between two attempts, in milliseconds. Default 10 min. */
  readonly maxRetryDelay?: number;
  /** Attempts in flight at once (each attempt sends to every URL). Default 32. */
  readonly concurrency?: number;
}

/** Test seams: not for application code. */
export interface DestinationInternals {
  readonly clock?: Clock;
  readonly random?: () => number;
}

/** What one URL did in one attempt. */
export interface UrlOutcome {
  /** The URL with credentials and query removed. */
  readonly url: string;
  /** Position of the URL in `webhooks`. */
  readonly index: number;
  readonly status?: number;
  readonly error?: EventRelayError;
  readonly retryable: boolean;
  readonly durationMs: number;
}

export type AttemptResult =
  | { readonly status: 'delivered'; readonly url: string; readonly attempt: number; readonly outcomes: readonly UrlOutcome[] }
  | { readonly status: 'retry'; readonly attempt: number; readonly nextAttemptAt: number; readonly outcomes: readonly UrlOutcome[] }
  | { readonly status: 'failed'; readonly attempt: number; readonly reason: string; readonly outcomes: readonly UrlOutcome[] };

export type DeliveryResult = Exclude<AttemptResult, { status: 'retry' }>;

export class WebhookDestination {
  constructor(options: WebhookDestinationOptions, internals: DestinationInternals = {}) {
    void options;
    void internals;
  }

  /** Serializes a message once; the same string is signed and sent on every URL and attempt. */
  static serialize(message: WebhookMessage): string {
    return JSON.stringify(message);
  }

  /** One attempt to every URL at once, no timers; never rejects. `attempt` is 1 for the first try. */
  async attempt(body: string, state: { readonly attempt: number; readonly firstAttemptAt: number }): Promise<AttemptResult> {
    void body;
    return { status: 'failed', attempt: state.attempt, reason: 'not implemented', outcomes: [] };
  }

  /** Attempt plus in-memory retries until delivered or final. Never rejects. */
  async deliver(message: WebhookMessage | string): Promise<DeliveryResult> {
    void message;
    return { status: 'failed', attempt: 0, reason: 'not implemented', outcomes: [] };
  }

  /** Stops retry timers and waits for attempts in flight. */
  async close(): Promise<void> {}
}
