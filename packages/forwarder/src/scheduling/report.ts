import type { AttemptResult } from '../delivery/destination';
import type { PendingDelivery } from '../store/contract';

/** One finished attempt, for events and logs (no body). */
export interface AttemptReport {
  readonly id: number;
  readonly source: string;
  readonly kind: PendingDelivery['kind'];
  readonly messageId: string;
  /** When the delivery was created (accepted, or queued again by a replay), epoch ms. */
  readonly createdAt: number;
  /** Its user key when it is delivered in order per user (see `NewDelivery.orderKey`). */
  readonly orderKey: string | undefined;
  readonly result: AttemptResult;
  /**
   * The store did not take the outcome: the delivery was finished meanwhile (its source deleted,
   * or delivered through another claim) or its lease went to another claim. The request was made;
   * what it says about the delivery is out of date.
   */
  readonly stale?: boolean;
  /**
   * For a call sent in a batch (batching.ts): the batch delivery whose attempt this is. Its URLs'
   * answers count once, on the batch's own report (kind `batch`), not on each call's.
   */
  readonly batch?: number;
}

/** The report of an attempt of `delivery` that ended with `result`. */
export function reportOf(delivery: PendingDelivery, result: AttemptResult): AttemptReport {
  const { id, source, kind, messageId, createdAt, orderKey } = delivery;
  return { id, source, kind, messageId, createdAt, orderKey, result };
}
