import type { DeliveryKind } from './queue';

/**
 * What became of every call a source sent, for operators. It sits beside the queue, not in it: the
 * queue decides what is sent, the log only remembers what happened.
 */

/** Where a logged call stands. `filtered`: no destination wanted it (`integrations`, or none on). */
export type DeliveryState = 'pending' | 'retrying' | 'delivered' | 'failed' | 'filtered' | 'duplicate' | 'refused';

/** A call to log: accepted (with or without a delivery) or refused. */
export interface LogCall {
  readonly source: string;
  /** The source's `SourceRecord.id` when known: `abandon` finishes the lines of one source, not of a later one of the same name. */
  readonly sourceId?: string;
  readonly kind: DeliveryKind;
  readonly messageId: string;
  /** Call type (`track`, ...), `delete` for deletion notices; undefined when a refused call had none. */
  readonly type: string | undefined;
  /** The track call's event name; undefined for the other types (and where unknown). */
  readonly event?: string | undefined;
  readonly userId: string | undefined;
  /** Receipt time, epoch ms. */
  readonly receivedAt: number;
  /** The webhook body when a delivery was made; undefined when filtered or refused. */
  readonly body: string | undefined;
  /** Set for refused calls (why) and filtered ones (which rule). */
  readonly reason?: string;
  readonly state: 'pending' | 'filtered' | 'refused' | 'duplicate';
}

/** What one URL did in one attempt. URLs are redacted (no credentials, no query). */
export interface LoggedAttempt {
  /** 1 for the first series; a replay starts the next. */
  readonly series: number;
  /** Attempt number within the series, from 1. */
  readonly attempt: number;
  /** When the attempt finished, epoch ms. */
  readonly at: number;
  readonly url: string;
  /** HTTP status, when the receiver answered. */
  readonly status: number | null;
  /** Error code (`ERR_TIMEOUT`, `ERR_NETWORK`, ...) when it did not answer, or `HTTP` for a non-2xx status. */
  readonly error: string | null;
  readonly durationMs: number;
  /** What the attempt as a whole led to. */
  readonly outcome: 'delivered' | 'retry' | 'failed';
  /** With `retry`: when the next attempt is due (the retry schedule's answer), epoch ms; else null. */
  readonly nextAttemptAt: number | null;
  /** The answer's first 2,048 bytes as text (a cut character as U+FFFD); null without one, and once the body is erased. */
  readonly responseBody: string | null;
}

/** One URL of an attempt; `response`: the answer's first bytes (RESPONSE_BYTES), undecoded: the log decodes them as it writes. */
export interface AttemptUrl {
  readonly url: string;
  readonly status: number | null;
  readonly error: string | null;
  readonly durationMs: number;
  readonly response?: Uint8Array | undefined;
}

/** One attempt of a delivery, as the scheduler reports it. */
export interface AttemptRecord {
  readonly source: string;
  readonly messageId: string;
  readonly attempt: number;
  readonly at: number;
  readonly outcome: 'delivered' | 'retry' | 'failed';
  /** Why it failed for good (`failed` only). */
  readonly reason?: string;
  /** When the next attempt is due (`retry` only), epoch ms. */
  readonly nextAttemptAt?: number;
  readonly urls: readonly AttemptUrl[];
}

/** A row of `GET /admin/messages`; its `id` is the delivery id of `GET /admin/deliveries/{id}`. */
export interface LoggedMessage {
  readonly id: number;
  readonly source: string;
  /** The `SourceRecord.id` of the source that sent it; null when unknown (a line written before ids). */
  readonly sourceId: string | null;
  readonly kind: DeliveryKind;
  readonly messageId: string;
  readonly type: string | null;
  /** The track call's event name; null for the other types. */
  readonly event: string | null;
  readonly userId: string | null;
  readonly receivedAt: number;
  readonly state: DeliveryState;
  /** Attempts made, over every series. */
  readonly attempts: number;
  /** 1, plus one per replay. */
  readonly series: number;
  readonly updatedAt: number;
  /** When it reached a final state, epoch ms; null while pending. */
  readonly finishedAt: number | null;
  /** Refused or filtered: why. Failed: the last reason. Retrying: the last error. */
  readonly reason: string | null;
  /** Whether the body is still stored. */
  readonly hasBody: boolean;
}

export interface DeliveryDetail extends LoggedMessage {
  readonly body: string | null;
  /** Oldest first. */
  readonly attemptLog: readonly LoggedAttempt[];
}

export interface MessageQuery {
  readonly source?: string;
  readonly state?: DeliveryState;
  readonly type?: string;
  readonly event?: string;
  readonly messageId?: string;
  readonly userId?: string;
  /** Received at or after, epoch ms. */
  readonly since?: number;
  /** Received before, epoch ms. */
  readonly until?: number;
  /** Only ids below this one (the cursor). */
  readonly beforeId?: number;
  readonly limit: number;
}

export interface DeliveryLogOptions {
  /** How long a delivered body is kept, in ms; 0 erases it when delivered. */
  readonly keepDelivered: number;
}

export interface DeliveryLog {
  /**
   * Calls, in order, each in the state it is logged in: accepted ones `pending` (a later attempt
   * goes to the newest of its key), `filtered` or `duplicate`; refused ones; deletion notices and
   * audience identifies.
   */
  add(calls: readonly LogCall[]): void;
  attempt(record: AttemptRecord): void;
  /**
   * Starts the next attempt series of each line in `ids` that is failed, or delivered with its
   * body kept: pending again at `at`, written at once, and atomically (on PostgreSQL, across
   * instances). Resolves with the lines it changed; a line replayed first by another caller is
   * left out, so that a call is queued again once however many replay it at the same time.
   */
  replay(ids: readonly number[], at: number): Promise<ReplayedLine[]>;
  /** Puts lines back as `replay` found them, when their delivery could not be queued. */
  unreplay(lines: readonly ReplayedLine[]): Promise<void>;
  /**
   * Finishes every open line (pending or retrying) of `source` as failed at `at` with `reason`:
   * the source was deleted and its queued deliveries given up. With `sourceId`, only the lines of
   * that source (and those without an id), never those of a source made again under the name.
   * Sees every write made before it. Attempts that come later change such a line only when they
   * delivered (an attempt that was in flight at the deletion).
   */
  abandon(source: string, at: number, reason: string, sourceId?: string): Promise<void>;
  /** Newest first. */
  list(query: MessageQuery): Promise<LoggedMessage[]>;
  get(id: number): Promise<DeliveryDetail | undefined>;
  /**
   * Failed deliveries of a source received in [since, until), oldest first, with a body to send
   * again; with `sourceId`, only those of that source (and lines without an id).
   */
  failed(source: string, since: number, until: number, sourceId?: string): Promise<DeliveryDetail[]>;
  /**
   * Removes what finished before `before` and erases delivered bodies older than the keep time.
   * Returns rows removed.
   */
  prune(before: number, now: number): Promise<number>;
  close(): Promise<void>;
}

/** A line `replay` changed: the series it started, and what it was before (for `unreplay`). */
export interface ReplayedLine {
  readonly id: number;
  readonly series: number;
  readonly before: { readonly state: DeliveryState; readonly updatedAt: number; readonly finishedAt: number | null; readonly reason: string | null };
}
