import type { Clock } from 'eventrelay/internal';
import type { OperatorLogger } from '../observability/logs';
import type { DestinationInternals } from '../delivery/destination';
import type { Notice } from '../delivery/notify';
import type { EndpointHealth } from '../observability/health';
import type { AttemptReport, DeliveryTarget } from '../scheduling/queue';
import type { ForwarderStore } from '../store/contract';

export interface ForwarderOptions {
  /** Data directory of the SQLite store; overrides `storage.dataDir` (the CLI's `--data`). */
  readonly dataDir?: string;
  /** A store to use instead of the configured one (e.g. a shared queue). The forwarder closes it. */
  readonly store?: ForwarderStore;
  /** Environment for `{ "env": NAME }` secrets. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Where operator log lines go (a pino logger, or anything with its `info`, `warn` and `error`):
   * refused ingestion, deliveries failed for good, endpoints disabled and enabled, store faults.
   * Default none; `eventrelay serve` logs JSON lines to stdout.
   */
  readonly logger?: OperatorLogger;
}

/** Test seams; not for application code. */
export interface ForwarderInternals {
  readonly clock?: Clock;
  readonly destination?: DestinationInternals;
  /** Replaces the destinations (by source name): a fake for scheduler tests. */
  readonly targets?: ReadonlyMap<string, DeliveryTarget>;
  /** How long a test event waits for rate limits, in ms (default 10 s). */
  readonly testWait?: number;
}

export interface ListenOptions {
  /** Default: the config's `port` (8787). 0 picks a free port. */
  readonly port?: number;
  /** Default: the config's `host` (127.0.0.1). */
  readonly host?: string;
}

export interface ForwarderStats {
  /** Messages acknowledged by the ingestion API, duplicates included. */
  readonly accepted: number;
  /** Acknowledged messages whose messageId the source had sent before: not forwarded again. */
  readonly duplicates: number;
  /** Messages the ingestion API refused (listed in an answer's `rejected`) since this process started. */
  readonly refused: number;
  /** Deliveries (messages, deletions, audience identifies) a webhook accepted. */
  readonly delivered: number;
  /** Deliveries waiting for a retry after a failed attempt. */
  readonly retrying: number;
  /** Deliveries given up: a final status, or the retry window ran out. */
  readonly failed: number;
  /** Deliveries not finished yet (never tried, or waiting for a retry). */
  readonly queueDepth: number;
  /** Age of the oldest unfinished delivery, in ms; null when the queue is empty. */
  readonly oldestPendingAge: number | null;
  /** Attempts in flight now. */
  readonly inFlight: number;
  /** Time since start, in ms. */
  readonly uptime: number;
  /** Health of each webhook URL over the last hour, in this process (URLs redacted). */
  readonly endpoints: readonly EndpointHealth[];
}

export interface DeletionResult {
  readonly userId: string;
  /** Sources that will get a `delete` notification. */
  readonly notified: readonly string[];
  /** Affected sources without a Webhooks destination switched on. */
  readonly skipped: readonly string[];
}

export interface ForwarderEvents {
  /** One attempt finished (delivered, retry or failed). */
  attempt: [report: AttemptReport];
  /**
   * A failure in the background that is not a delivery's: an `attempt` listener that threw.
   * Delivery goes on. Without an `error` listener it is only logged (`DEBUG=eventrelay:forwarder`).
   */
  error: [error: Error];
  /**
   * A notice for the operator (the same object `notify.url` receives): a webhook URL this
   * instance disabled (`endpoint.disabled`) or enabled (`endpoint.enabled`), or a delivery it gave
   * up (`delivery.exhausted`).
   */
  endpoint: [notice: Notice];
}
