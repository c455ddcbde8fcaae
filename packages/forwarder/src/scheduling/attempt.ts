import createDebug from 'debug';
import type { Clock } from 'eventrelay/internal';
import type { AttemptResult, AttemptState } from '../delivery/destination';
import type { DeliveryTarget, DeliveryTargets } from '../delivery/target';
import type { PendingDelivery } from '../store/contract';
import type { Batching } from './batching';
import type { InFlight } from './in-flight';
import type { Recording } from './recording';
import type { AttemptReport } from './report';
import { reportOf } from './report';

const log = createDebug('eventrelay:forwarder');

/** Delay before a delivery is looked at again when attempt() broke its promise never to reject, in ms. */
const BROKEN_ATTEMPT_DELAY = 60_000;

/** The answer that splits a batch in halves. */
const PAYLOAD_TOO_LARGE = 413;

/** The URL position of a batch delivery's destination, `Webhooks#<index>`. */
function urlIndex(destination: string): number | undefined {
  const hash = destination.indexOf('#');
  const index = hash < 0 ? NaN : Number(destination.slice(hash + 1));
  return Number.isInteger(index) && index >= 0 ? index : undefined;
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
    private readonly batching: Batching,
  ) {}

  /**
   * Starts one attempt of `delivery` (leased to this instance, due) now; a call of a source that
   * batches joins its open batch instead (batching.ts).
   */
  start(delivery: PendingDelivery, now: number): void {
    const target = this.targets.get(delivery.source);
    if (delivery.kind === 'batch') {
      this.startBatch(delivery, target, now);
      return;
    }
    if (this.batching.takes(delivery, target)) {
      this.batching.add(delivery, target!, now);
      return;
    }
    this.inFlight.add(delivery, now);
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

  /** One attempt of a stored batch: its bytes to its URL (`Webhooks#<index>`). */
  private startBatch(delivery: PendingDelivery, target: DeliveryTarget | undefined, now: number): void {
    this.inFlight.add(delivery, now);
    const state: AttemptState = { attempt: delivery.attempts + 1, firstAttemptAt: delivery.firstAttemptAt ?? now, id: delivery.messageId };
    const index = urlIndex(delivery.destination);
    const attempt: Promise<AttemptResult> =
      target?.attemptBatch === undefined || index === undefined
        ? Promise.resolve({ status: 'retry', attempt: state.attempt, nextAttemptAt: now, outcomes: [] })
        : target.attemptBatch(index, delivery.body, state);
    attempt.then(
      (result) => this.endedBatch(delivery, state, result),
      (error: unknown) => {
        log('batch %d: attempt threw %s', delivery.id, (error as Error).message);
        this.endedBatch(delivery, state, { status: 'retry', attempt: state.attempt, nextAttemptAt: this.clock.now() + BROKEN_ATTEMPT_DELAY, outcomes: [] });
      },
    );
  }

  private endedBatch(delivery: PendingDelivery, state: AttemptState, result: AttemptResult): void {
    this.inFlight.remove(delivery);
    const report: AttemptReport = { id: delivery.id, source: delivery.source, kind: 'batch', messageId: delivery.messageId, createdAt: delivery.createdAt, orderKey: undefined, result };
    // Too large for the receiver: sent again as two halves, when it holds more than one call.
    if (result.status === 'retry' && result.outcomes.some((o) => o.status === PAYLOAD_TOO_LARGE)) {
      this.recording.after(async () => {
        const split = await this.batching.split(delivery, this.clock.now()).catch((error: Error) => {
          log('batch %d: could not split it: %s', delivery.id, error.message);
          return false;
        });
        if (!split) this.recording.addBatch(delivery, state, result, report);
      });
      return;
    }
    this.recording.addBatch(delivery, state, result, report);
  }

  private ended(delivery: PendingDelivery, state: AttemptState, result: AttemptResult): void {
    const report = reportOf(delivery, result);
    // The request is over: its slot goes to the next attempt while the outcome is written.
    this.inFlight.remove(delivery);
    this.recording.add(delivery, state, result, report);
  }
}
