/**
 * The forwarder's queue, behind one interface so the embedded SQLite store (one machine) can be
 * swapped for the shared PostgreSQL one (several forwarder processes) without touching ingestion,
 * routing or the scheduler. Every method is async for that reason, even though the SQLite and
 * memory stores are synchronous underneath.
 *
 * Several processes may share one store: a delivery is handed out by `claim()` with a lease (an
 * owner, a token and an expiry). While the lease runs, no other claim returns the delivery; when
 * it runs out without an outcome (its holder died, or is very slow) the delivery is due again and
 * any instance may claim it. `record()` checks the token, so an outcome is written once.
 */

/**
 * What produced a delivery: an ingested call, a deletion request, an audience sync, or a notice
 * to the operator's `notify` URL; or `batch`: one body of calls to one URL with `batch` set,
 * stored by the delivery loop (contract/batches.ts).
 */
export type DeliveryKind = 'message' | 'delete' | 'audience' | 'notice' | 'batch';

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
  /**
   * Its user key when its destination delivers in order per user (`ordering: "user"`), else
   * undefined. Of the pending deliveries of a source with the same key, only the oldest (the first
   * stored) is claimed, and only while no other is in flight: the others wait until it is
   * delivered or failed for good. At acceptance one is leased (`accept`'s `lease`) only when it
   * is the first of its key in the commit and no other of its key is pending in the store: then
   * nothing of its user is ahead of it, and nothing of its user can be stored ahead of it since
   * (PostgreSQL takes a lock per key in the commit, so two instances never both lease one).
   */
  readonly orderKey?: string | undefined;
}

/** A call accepted by the ingestion API, with the deliveries routed from it. */
export interface AcceptedMessage {
  readonly source: string;
  readonly messageId: string;
  /** Receipt time, epoch ms. */
  readonly receivedAt: number;
  /** Empty when the message's `integrations` or the source's config turn every destination off. */
  readonly deliveries: readonly NewDelivery[];
  /** Why `deliveries` is empty (the rule that stopped the call), for the delivery log and the counts; stores ignore it. */
  readonly filtered?: FilteredBy;
}

/** Why an accepted call was not forwarded: a metric label and the reason the delivery log shows. */
export interface FilteredBy {
  /** `blocked_type`, `blocked_event`, `tracking_plan`, `url_filter`, `integrations` or `no_destination`. */
  readonly rule: string;
  readonly reason: string;
}

export interface AcceptResult {
  /** Messages stored for the first time. */
  readonly stored: number;
  /**
   * Messages whose `messageId` this source sent before (within the retention window), e.g. a
   * client retrying a batch whose answer it never got: acknowledged again, not routed again.
   */
  readonly duplicates: number;
  /**
   * Per message of the request, in order: true for a repeated messageId (one of the `duplicates`),
   * as the store found it; the delivery log logs those `duplicate`.
   */
  readonly repeated: readonly boolean[];
  /**
   * With a `lease` given to `accept()` (and a store that takes it): the deliveries stored, already
   * leased as a claim would have leased them, in the order of the request's messages. The caller
   * attempts them without a claim. Every store answers with this key present (`undefined` when
   * nothing was leased), in this order: one object shape, so that the ingestion path's optimized
   * code is not thrown away when hand-over turns on or off (the store contract checks the keys).
   */
  readonly leased?: readonly PendingDelivery[];
}

/**
 * A lease taken by the commit that stores deliveries (`accept`), so that the instance that
 * accepted a call attempts it without a claim: from `now` for `ms`, like a claim at `now`. Until
 * it ends no claim returns the delivery; it is due at the lease's end if no outcome came.
 */
export interface AcceptLease extends LeaseRequest {
  /** When the lease starts, epoch ms: the call's receipt. */
  readonly now: number;
}

/** A delivery waiting for its next attempt, as `claim()` hands it out. */
export interface PendingDelivery extends NewDelivery {
  readonly id: number;
  /**
   * The token of the claim that handed it out (a per-delivery claim counter): pass it back in the
   * outcome. 0 for a delivery never claimed.
   */
  readonly lease: number;
  /** Attempts made so far (0 before the first). */
  readonly attempts: number;
  /** Start of the first attempt, epoch ms; undefined before it. */
  readonly firstAttemptAt: number | undefined;
  readonly nextAttemptAt: number;
}

/**
 * What became of one attempt, written back to the store; `lease` is the claim's token. A delivered
 * or failed outcome carries the delivery's `orderKey` (PendingDelivery.orderKey) when it has one:
 * a store may then release the next delivery of that key without reading the key back. Without
 * it, the next of the key waits for the next claim.
 */
export type DeliveryOutcome =
  | {
    readonly id: number;
    readonly lease: number;
    readonly status: 'delivered';
    readonly attempts: number;
    readonly firstAttemptAt: number;
    readonly at: number;
    readonly orderKey?: string | undefined;
  }
  | {
    readonly id: number;
    readonly lease: number;
    readonly status: 'retry';
    readonly attempts: number;
    readonly firstAttemptAt: number | undefined;
    readonly nextAttemptAt: number;
    /** Short reason, for operators; never a body or a secret. */
    readonly error?: string;
  }
  | {
    readonly id: number;
    readonly lease: number;
    readonly status: 'failed';
    readonly attempts: number;
    readonly firstAttemptAt: number | undefined;
    readonly at: number;
    readonly reason: string;
    readonly orderKey?: string | undefined;
  };

/** A claim: who takes the deliveries, and for how long. */
export interface LeaseRequest {
  /** Who holds the lease: the forwarder instance's id (for operators; tokens decide). */
  readonly owner: string;
  /** How long the deliveries are reserved, in ms from `now`; they are due again after it. */
  readonly ms: number;
}

/** What `record()` did. */
export interface RecordResult {
  /** Outcomes written. */
  readonly recorded: number;
  /**
   * Ids whose outcome was not written: the delivery had finished already, or its lease had
   * expired and another claim took it (that holder's outcome counts). A `delivered` outcome
   * is written even from an expired lease while the delivery is still pending: the receiver
   * has the message, so sending it again would only make a duplicate.
   */
  readonly stale: readonly number[];
  /**
   * The source of each written outcome that finished an ordered delivery (delivered, or failed
   * for good) with another of its key pending behind it: that one may be claimed now. A source
   * may repeat. Every store answers with this key present.
   */
  readonly released: readonly string[];
}

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

/**
 * Membership change computed by an audience sync. `plan` callbacks get it in chunks (at most
 * `AUDIENCE_CHUNK` users each), so a sync of 300,000 members never blocks the event loop for long.
 */
export interface AudienceChange {
  /** True when the audience had never been synced: every member counts as added. */
  readonly firstSync: boolean;
  readonly added: readonly string[];
  readonly removed: readonly string[];
}
