import createDebug from 'debug';
import type { Clock } from 'eventrelay/internal';
import type { AttemptResult, AttemptState } from '../delivery/destination';
import type { DeliveryTargets } from '../delivery/target';
import type { PendingDelivery } from '../store/contract';
import type { InFlight } from './in-flight';
import type { Recording } from './recording';
import type { AttemptReport } from './report';

const log = createDebug('eventrelay:forwarder');

/** Delay before a delivery is looked at again when attempt() broke its promise never to reject, in ms. */
const BROKEN_ATTEMPT_DELAY = 60_000;

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
