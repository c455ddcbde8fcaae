/**
 * Automatic disable of a webhook URL that only fails: the state kept per source and URL. The rule
 * is pure, once, in store/endpoint-rows.ts: each store only reads and writes rows in a transaction.
 */

/** What is kept of one URL of one source. */
export interface EndpointState {
  readonly source: string;
  /** Digest of the source and the full URL (`rateKey`): the URL itself may hold a token. */
  readonly key: string;
  /** The URL as shown: no credentials, no query. */
  readonly url: string;
  /** Failed attempts since the last success (or since it was enabled). */
  readonly failures: number;
  /** When the current run of failures began (epoch ms); undefined after a success. */
  readonly failingSince: number | undefined;
  readonly lastFailureAt: number | undefined;
  /** The last failure's error, as the delivery log shows it (status or error code, and text). */
  readonly lastError: string | undefined;
  /** When it was disabled; undefined while it is enabled. */
  readonly disabledAt: number | undefined;
  /** Why, in words; undefined while it is enabled. */
  readonly disabledReason: string | undefined;
}

/** What happened to one URL since the last report: attempts are folded in order. */
export interface EndpointReport {
  readonly source: string;
  readonly key: string;
  readonly url: string;
  /** A success came after what was reported before: the run of failures ended. */
  readonly reset: boolean;
  /** Failed attempts after that success (all of them, without one). */
  readonly failures: number;
  readonly firstFailureAt?: number;
  readonly lastFailureAt?: number;
  readonly lastError?: string;
  /** The URL answered 410 Gone after the last success reported: it is disabled at once. */
  readonly gone?: boolean;
}

/** `delivery.disableAfter` (0: never by time; a 410 disables all the same) and the attempts needed. */
export interface DisableRule {
  readonly after: number;
  readonly minAttempts: number;
}

export interface EndpointReportResult {
  /** The states the report wrote. */
  readonly states: readonly EndpointState[];
  /** URLs this report disabled (the transition happens once, in one call, whichever instance makes it). */
  readonly disabled: readonly EndpointState[];
}

/**
 * Where the states live: in memory, or in the SQLite or PostgreSQL store so that they survive a
 * restart and every instance sees them.
 */
export interface EndpointStore {
  list(): Promise<EndpointState[]>;
  /** Folds the reports into the states, in one transaction, and disables the URLs the rule says. */
  report(reports: readonly EndpointReport[], rule: DisableRule): Promise<EndpointReportResult>;
  /** Enables a disabled URL and clears its run of failures; its state when it was disabled, else undefined. */
  enable(source: string, key: string, at: number): Promise<EndpointState | undefined>;
}
