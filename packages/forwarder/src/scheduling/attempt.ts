import createDebug from 'debug';
import type { Clock } from 'eventrelay/internal';
import type { AttemptResult, AttemptState } from '../delivery/destination';
import type { DeliveryTargets } from '../delivery/target';
import type { PendingDelivery } from '../store/contract';
import type { Recording } from './recording';

const log = createDebug('eventrelay:forwarder');

/** Delay before a delivery is looked at again when attempt() broke its promise never to reject, in ms. */
const BROKEN_ATTEMPT_DELAY = 60_000;

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
}

/**
 * The requests in flight from this instance: which deliveries, how many per source, and how many
 * started in the last whole second (what this instance can start soon, for the hand-over).
 */
export class InFlight {
  private readonly ids = new Set<number>();
  private readonly perSource = new Map<string, number>();
  private second = 0;
  private startedThisSecond = 0;
  private startedLastSecond = 0;

  get size(): number {
    return this.ids.size;
  }

  has(id: number): boolean {
    return this.ids.has(id);
  }

  /** Requests in flight for `source`. */
  of(source: string): number {
    return this.perSource.get(source) ?? 0;
  }

  /** Attempts started in the last whole second before `now` (0 after a second without any). */
  lastSecond(now: number): number {
    this.roll(now);
    return this.startedLastSecond;
  }

  add(delivery: PendingDelivery, now: number): void {
    this.roll(now);
    this.startedThisSecond++;
    this.ids.add(delivery.id);
    this.perSource.set(delivery.source, this.of(delivery.source) + 1);
  }

  remove(delivery: PendingDelivery): void {
    this.ids.delete(delivery.id);
    this.perSource.set(delivery.source, this.of(delivery.source) - 1);
  }

  private roll(now: number): void {
    const second = Math.floor(now / 1000);
    if (second === this.second) return;
    this.startedLastSecond = second === this.second + 1 ? this.startedThisSecond : 0;
    this.startedThisSecond = 0;
    this.second = second;
  }
}

/**
 * The attempt step of a batch's path: one request per leased delivery through its source's
 * destination (`delivery/destination.ts`: sign, send, the retry schedule), its slot held while the
 * request runs, and the result handed to the recording step, whichever way it ended.
 */
export class Attempts {
  constructor(
    private readonly targets: DeliveryTargets,
    private readonly clock: Clock,
    private readonly inFlight: InFlight,
    private readonly recording: Recording,
  ) {}

  /** Starts one attempt of `delivery` (leased to this instance, due) now. */
  start(delivery: PendingDelivery, now: number): void {
    this.inFlight.add(delivery, now);
    const target = this.targets.get(delivery.source);
    // `id` is the Standard Webhooks webhook-id: the messageId, stable across retries (random per delete notice).
    const state: AttemptState = { attempt: delivery.attempts + 1, firstAttemptAt: delivery.firstAttemptAt ?? now, id: delivery.messageId };
    // Switched off (or removed) between the claim and now: handed back due at once, not attempted,
    // and it waits in the store until the destination is on again.
    const attempt: Promise<AttemptResult> =
      target === undefined ? Promise.resolve({ status: 'retry', attempt: state.attempt, nextAttemptAt: now, outcomes: [] }) : target.attempt(delivery.body, state);
    // One reaction for either ending: no chained promise per attempt.
    attempt.then(
      (result) => this.ended(delivery, state, result),
      (error: unknown) => {
        // attempt() never rejects; should it ever, look again later rather than lose the delivery.
        log('delivery %d: attempt threw %s', delivery.id, (error as Error).message);
        this.ended(delivery, state, { status: 'retry', attempt: state.attempt, nextAttemptAt: this.clock.now() + BROKEN_ATTEMPT_DELAY, outcomes: [] });
      },
    );
  }

  private ended(delivery: PendingDelivery, state: AttemptState, result: AttemptResult): void {
    const report: AttemptReport = {
      id: delivery.id,
      source: delivery.source,
      kind: delivery.kind,
      messageId: delivery.messageId,
      createdAt: delivery.createdAt,
      orderKey: delivery.orderKey,
      result,
    };
    // The request is over: its slot goes to the next attempt while the outcome is written.
    this.inFlight.remove(delivery);
    this.recording.add(delivery, state, result, report);
  }
}
