/**
 * The forwarder's queue, behind one interface so the embedded SQLite store (one machine) can be
 * swapped for a shared one (Redis/BullMQ or PostgreSQL, for several forwarder instances) without
 * touching ingestion, routing or the scheduler. Every method is async for that reason, even
 * though the two built-in stores are synchronous underneath.
 */

/** What produced a delivery: an ingested call, a deletion request or an audience sync. */
export type DeliveryKind = 'message' | 'delete' | 'audience';

/** A delivery to create: one webhook body for one destination of one source. */
export interface NewDelivery {
  readonly source: string;
  /** Destination name, `Webhooks`. */
  readonly destination: string;
  readonly kind: DeliveryKind;
  /** The message's id, for logs and for receivers to deduplicate (random for deletions). */
  readonly messageId: string;
  /** The webhook body, serialized once when routed; the exact bytes sent and signed. */
  readonly body: string;
  /** When it was created (epoch ms); it is due at once. */
  readonly createdAt: number;
}

/** A call accepted by the ingestion API, with the deliveries routed from it. */
export interface AcceptedMessage {
  readonly source: string;
  readonly messageId: string;
  /** Receipt time, epoch ms. */
  readonly receivedAt: number;
  /** Empty when the message's `integrations` or the source's config turn every destination off. */
  readonly deliveries: readonly NewDelivery[];
}

export interface AcceptResult {
  /** Messages stored for the first time. */
  readonly stored: number;
  /**
   * Messages whose `messageId` this source sent before (within the retention window), e.g. a
   * client retrying a batch whose answer it never got: acknowledged again, not routed again.
   */
  readonly duplicates: number;
}

/** A delivery waiting for its next attempt. */
export interface PendingDelivery extends NewDelivery {
  readonly id: number;
  /** Attempts made so far (0 before the first). */
  readonly attempts: number;
  /** Start of the first attempt, epoch ms; undefined before it. */
  readonly firstAttemptAt: number | undefined;
  readonly nextAttemptAt: number;
}

/** What became of one attempt, written back to the store. */
export type DeliveryOutcome =
  | { readonly id: number; readonly status: 'delivered'; readonly attempts: number; readonly firstAttemptAt: number; readonly at: number }
  | {
      readonly id: number;
      readonly status: 'retry';
      readonly attempts: number;
      readonly firstAttemptAt: number | undefined;
      readonly nextAttemptAt: number;
      /** Short reason, for operators; never a body or a secret. */
      readonly error?: string;
    }
  | {
      readonly id: number;
      readonly status: 'failed';
      readonly attempts: number;
      readonly firstAttemptAt: number | undefined;
      readonly at: number;
      readonly reason: string;
    };

/** Totals since the store was created (they survive restarts) and the state of the queue. */
export interface StoreCounts {
  readonly accepted: number;
  readonly duplicates: number;
  readonly delivered: number;
  readonly failed: number;
  /** Deliveries waiting (never tried, or waiting for a retry). */
  readonly pending: number;
  /** Pending deliveries that failed at least once. */
  readonly retrying: number;
  /** Creation time of the oldest pending delivery, epoch ms. */
  readonly oldestPendingAt: number | undefined;
}

/** Membership change computed by an audience sync. */
export interface AudienceChange {
  /** True when the audience had never been synced: every member counts as added. */
  readonly firstSync: boolean;
  readonly added: readonly string[];
  readonly removed: readonly string[];
}

export interface ForwarderStore {
  /**
   * Stores accepted messages and their deliveries in one transaction; resolves only when they
   * are durable, so the ingestion API may answer 2xx.
   */
  accept(messages: readonly AcceptedMessage[]): Promise<AcceptResult>;
  /** Stores deliveries that come from no ingested message (deletion notices), in one transaction. */
  enqueue(deliveries: readonly NewDelivery[]): Promise<void>;
  /**
   * Pending deliveries of one source due at `now`, oldest due first, at most `limit`, skipping
   * the ids in `exclude` (attempts in flight). Does not change them. Per source, so that the
   * scheduler can share attempts fairly and one slow receiver cannot hold them all.
   */
  due(source: string, now: number, limit: number, exclude: ReadonlySet<number>): Promise<PendingDelivery[]>;
  /** The earliest `nextAttemptAt` after `now` among the source's pending deliveries, if any. */
  nextDueAfter(source: string, now: number): Promise<number | undefined>;
  /** Writes attempt outcomes in one transaction. */
  record(outcomes: readonly DeliveryOutcome[]): Promise<void>;
  /**
   * Replaces the membership of an audience and stores the deliveries `plan` builds from the
   * change, in one transaction (a crash never records a change whose notices were not stored).
   */
  syncAudience(
    source: string,
    audience: string,
    members: readonly string[],
    plan: (change: AudienceChange) => readonly NewDelivery[],
  ): Promise<AudienceChange>;
  counts(): Promise<StoreCounts>;
  /** Removes finished deliveries and remembered messageIds older than `before` (epoch ms). Returns rows removed. */
  prune(before: number): Promise<number>;
  close(): Promise<void>;
}

/** The membership change from `current` to `next`; the first sync adds everyone. */
export function audienceChange(current: ReadonlySet<string> | undefined, next: readonly string[]): AudienceChange {
  const wanted = new Set(next);
  if (current === undefined) return { firstSync: true, added: [...wanted], removed: [] };
  return {
    firstSync: false,
    added: [...wanted].filter((id) => !current.has(id)),
    removed: [...current].filter((id) => !wanted.has(id)),
  };
}
