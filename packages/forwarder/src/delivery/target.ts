import type { AttemptResult, AttemptState, CallParts } from './destination';
import type { BatchSettings } from '../batch-body';

/** What the scheduler needs of a destination: one attempt, no timers (WebhookDestination#attempt). */
export interface DeliveryTarget {
  attempt(body: string, state: AttemptState): Promise<AttemptResult>;
  /**
   * Rate limits (WebhookDestination#room): how many of `wanted` attempts may start now, and when
   * none may, when to look again. Absent: no limit.
   */
  room?(now: number, wanted: number, skip?: readonly number[]): { readonly count: number; readonly readyAt?: number };
  /**
   * Batched delivery (WebhookDestination#batches): each URL's `batch` settings by position, or
   * undefined (or absent) when no URL has one: then every call is attempted on its own.
   */
  readonly batches?: readonly (BatchSettings | undefined)[] | undefined;
  /** What each URL a call goes to gets (WebhookDestination#parts); present with `batches`. */
  parts?(body: string, state: AttemptState): Promise<CallParts>;
  /** One attempt of a stored batch to the URL at `index` (WebhookDestination#attemptBatch); present with `batches`. */
  attemptBatch?(index: number, body: string, state: AttemptState): Promise<AttemptResult>;
}

/**
 * The sources to deliver for and their destinations, read on every round: sources are switched
 * on, off, added and removed at runtime. A `Map` of source names to targets is one too.
 */
export interface DeliveryTargets {
  /** Sources whose deliveries are claimed; those of any other source wait in the store. */
  readonly sources: readonly string[];
  get(source: string): DeliveryTarget | undefined;
  /**
   * Which source is served under the name now (its `SourceRecord.id`): deliveries claimed or
   * handed over for one are not attempted for another made under the same name meanwhile.
   * Absent: names are never reused (a test's fixed map).
   */
  incarnation?(source: string): string | undefined;
}
