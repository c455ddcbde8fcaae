import type { AttemptResult, AttemptState } from './destination';

/** What the scheduler needs of a destination: one attempt, no timers (WebhookDestination#attempt). */
export interface DeliveryTarget {
  attempt(body: string, state: AttemptState): Promise<AttemptResult>;
  /**
   * Rate limits (WebhookDestination#room): how many of `wanted` attempts may start now, and when
   * none may, when to look again. Absent: no limit.
   */
  room?(now: number, wanted: number, skip?: readonly number[]): { readonly count: number; readonly readyAt?: number };
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
