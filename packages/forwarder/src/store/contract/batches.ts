import type { DeliveryOutcome, LeaseRequest, PendingDelivery, RecordResult } from './queue';

/**
 * Batched delivery (issue 45, docs/batched-delivery.md): the calls of a source with a batched URL
 * are not attempted one by one. The delivery loop claims them (the members), builds one body per
 * URL and stores each body as a delivery of its own (kind `batch`, destination `Webhooks#<index>`),
 * which is claimed, attempted, retried and leased like any other, with exactly the stored bytes.
 * A member stays pending, parked (never due), until its batches end it: delivered by the first
 * batch holding it that is delivered, failed once every batch holding it has failed. Parked, it
 * still holds its user's place in line (`ordering: "user"`): the user's next call waits for it.
 */

/** Far beyond any real time: a parked member's `nextAttemptAt`, so no claim finds it due. */
export const PARKED_AT = 8_640_000_000_000_000;

/** A body of calls to store as a batch delivery. */
export interface NewBatch {
  readonly source: string;
  /** `Webhooks#<index>`: the position in the destination's `webhooks` of the URL it goes to. */
  readonly destination: string;
  /**
   * What the receiver may deduplicate by (Standard Webhooks `webhook-id`): random per batch; for a
   * batch that is one call to a URL without `batch`, the call's messageId.
   */
  readonly messageId: string;
  /** The exact body sent and signed, on every attempt. */
  readonly body: string;
  /** Member delivery ids, in the order of the body (a member may be in one batch per URL). */
  readonly members: readonly number[];
}

/** A claimed member: its id and the token of the claim that handed it out. */
export interface MemberLease {
  readonly id: number;
  readonly lease: number;
}

/** A member as a batch delivery knows it. */
export interface BatchMember {
  readonly id: number;
  readonly source: string;
  readonly messageId: string;
  readonly orderKey: string | undefined;
  readonly createdAt: number;
  /** Whether it is still pending (no batch holding it has ended it yet). */
  readonly pending: boolean;
}

/** A member its batches ended, as `recordBatches` wrote it. */
export interface FinishedMember extends BatchMember {
  readonly status: 'delivered' | 'failed';
  /** The batch delivery whose outcome ended it. */
  readonly batchId: number;
}

/** What `recordBatches` did: as `record`, for the batch deliveries, plus the members it ended. */
export interface BatchRecordResult extends RecordResult {
  readonly members: readonly FinishedMember[];
}

/**
 * The queue's batches. Every method is one transaction; every store (memory, SQLite, PostgreSQL)
 * has it as `ForwarderStore.batches`.
 */
export interface BatchStore {
  /**
   * Stores `batches` for the claimed `members`, in one transaction: when every member's lease
   * still holds (its token is current, it is pending), each batch becomes a delivery of kind
   * `batch` (no orderKey), leased to `lease.owner` from `now` for `lease.ms` like a claim, and
   * linked to its members in order; every member is parked (pending, `nextAttemptAt` =
   * `PARKED_AT`, its token bumped so that an outcome of the old claim is stale). Resolves with the
   * batch deliveries in the order given. When a member's lease no longer holds, stores nothing and
   * resolves with null: the caller drops the bodies, and the members are claimed again (by
   * anyone) once their leases end. A member with no batch in `batches` is checked but not
   * touched; a batch holding an id that is not in `members` is a caller's mistake: it rejects
   * with a TypeError, storing nothing.
   */
  seal(members: readonly MemberLease[], batches: readonly NewBatch[], now: number, lease: LeaseRequest): Promise<PendingDelivery[] | null>;
  /**
   * The members of a batch delivery, in the order of its body; empty for an unknown id, and for a
   * batch delivery pruned or split (a member pruned before its batch is left out).
   */
  members(batchId: number): Promise<BatchMember[]>;
  /**
   * Writes outcomes of batch deliveries like `record` (leases checked the same way), in one
   * transaction, and ends their members: a `delivered` batch delivers each of its members still
   * pending; a `failed` one fails each member still pending none of whose batches is pending or
   * delivered. An ended member counts in the store's `delivered` or `failed` totals (a batch
   * delivery counts in none), and an ordered one releases its source as `record` does. A `retry`
   * touches no member. A `delivered` outcome of a batch its source's deletion gave up while that
   * lease was out is written as `record` writes one: its members given up with it count delivered,
   * no longer failed.
   */
  recordBatches(outcomes: readonly DeliveryOutcome[]): Promise<BatchRecordResult>;
  /**
   * Replaces a leased batch delivery (answered 413) by `parts` over the same members, in one
   * transaction: when the lease (`batch.lease`) still holds, the batch delivery is removed, and
   * each part is stored and linked as `seal` does (leased to `lease.owner` from `now`). Resolves
   * with the parts' deliveries, or null (nothing changed) when the lease no longer holds. The
   * members stay parked as they are. A part holding an id the batch does not is refused as in `seal`.
   */
  split(batch: MemberLease, parts: readonly NewBatch[], now: number, lease: LeaseRequest): Promise<PendingDelivery[] | null>;
}
