import { randomUUID } from 'node:crypto';
import createDebug from 'debug';
import type { Clock, TimerHandle } from 'eventrelay/internal';
import type { AttemptResult, AttemptState } from '../delivery/destination';
import type { DeliveryOutcome, ForwarderStore, LeaseRequest, PendingDelivery } from '../store/store';

const log = createDebug('analytics:forwarder');

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
}

function asTargets(targets: ReadonlyMap<string, DeliveryTarget> | DeliveryTargets): DeliveryTargets {
  if (!(targets instanceof Map)) return targets as DeliveryTargets;
  const map = targets as ReadonlyMap<string, DeliveryTarget>;
  const sources = [...map.keys()];
  return { sources, get: (source) => map.get(source) };
}

export interface SchedulerOptions {
  /** Attempts in flight at once, over all sources. */
  readonly concurrency: number;
  /**
   * Attempts in flight at once for one source, so that a receiver that hangs until the timeout
   * cannot hold every slot. Default: `concurrency` when one source delivers, else half of it
   * (rounded up), as the sources are at each round.
   */
  readonly sourceConcurrency?: number;
  /** Longest sleep when nothing is due, in ms: a safety net, since new work wakes the loop. Default 5000. */
  readonly idleWait?: number;
  /**
   * Who claims: this instance's id, stored with each lease for operators. Default a random id.
   */
  readonly owner?: string;
  /**
   * How long a claimed delivery stays reserved for this instance, in ms; when it runs out without
   * an outcome (the process died), any instance may claim it again. Must exceed an attempt's
   * longest duration (the receivers' timeout). Default 30000.
   */
  readonly leaseMs?: number;
  /** Called with a failure of the loop that is not the store's (a throwing `onAttempt`). */
  readonly onError?: (error: Error) => void;
}

/** One finished attempt, for events and logs (no body). */
export interface AttemptReport {
  readonly id: number;
  readonly source: string;
  readonly kind: PendingDelivery['kind'];
  readonly messageId: string;
  /** When the delivery was created (accepted, or queued again by a replay), epoch ms. */
  readonly createdAt: number;
  readonly result: AttemptResult;
}

const DEFAULTS = { idleWait: 5000, leaseMs: 30_000 } as const;

/** Delay before a delivery is looked at again when attempt() broke its promise never to reject, in ms. */
const BROKEN_ATTEMPT_DELAY = 60_000;

/**
 * How long the store's answer to "when is this source's next delivery due" is reused while
 * attempts are in flight, in ms: the bound on how late such a delivery can start then.
 */
const NEXT_DUE_MAX_AGE = 1000;

/**
 * The delivery loop: claims due deliveries from the store with a lease, source by source in turn
 * (at most `concurrency` in flight, at most `sourceConcurrency` per source), makes one attempt each
 * through the source's destination, and writes the outcome back with the lease's token: done,
 * failed, or the next attempt time the destination computed. Outcomes that finish in the same turn
 * of the event loop are written in one transaction. A claimed delivery is reserved for this
 * instance until its outcome is written or the lease runs out, so no two live instances attempt it
 * at once; if the process dies first, the store still has it pending and it is attempted again
 * once the lease ends (at-least-once). Deliveries of a source without a destination (removed from
 * the config, or switched off) are left pending, visible in the queue depth.
 *
 * A delivery that becomes due while the loop sleeps starts on time when the loop knows its time
 * (a retry this instance scheduled, or a time the store gave), and at most `NEXT_DUE_MAX_AGE`
 * (1 s) late otherwise (a retry another instance wrote, a lease that ran out), even while other
 * attempts hang in flight; see `sleepUntilNextDue`.
 */
export class Scheduler {
  private readonly inFlight = new Set<number>();
  private readonly perSource = new Map<string, number>();
  private readonly targets: DeliveryTargets;
  private turn = 0;
  private readonly outcomes: Array<{ outcome: DeliveryOutcome; report: AttemptReport }> = [];
  /**
   * Per source, the time its last claim looked for due deliveries: one that fell due after it
   * (while the store answered, on a slow machine) was not claimed, and must not be waited for.
   */
  private readonly claimedAt = new Map<string, number>();
  /** Per source, the store's last answer to `nextDueAfter` (`at`) and when it was asked (`fetchedAt`). */
  private readonly nextDue = new Map<string, { at: number | undefined; fetchedAt: number }>();
  /** Per source held back by its rate limits: when they allow attempts again. */
  private readonly rateReady = new Map<string, number>();
  private readonly idleWait: number;
  private readonly lease: LeaseRequest;
  private timer: TimerHandle | undefined;
  private pumping: Promise<void> | undefined;
  private again = false;
  private flushing: Promise<void> | undefined;
  private flushQueued = false;
  private stopped = false;
  private started = false;
  private drained: (() => void) | undefined;

  constructor(
    private readonly store: ForwarderStore,
    targets: ReadonlyMap<string, DeliveryTarget> | DeliveryTargets,
    private readonly clock: Clock,
    private readonly options: SchedulerOptions,
    private readonly onAttempt: (report: AttemptReport) => void = () => {},
  ) {
    this.idleWait = options.idleWait ?? DEFAULTS.idleWait;
    this.lease = { owner: options.owner ?? randomUUID(), ms: options.leaseMs ?? DEFAULTS.leaseMs };
    this.targets = asTargets(targets);
  }

  private get sources(): readonly string[] {
    return this.targets.sources;
  }

  private get sourceCap(): number {
    const { concurrency, sourceConcurrency } = this.options;
    return sourceConcurrency ?? (this.sources.length <= 1 ? concurrency : Math.ceil(concurrency / 2));
  }

  /** Attempts in flight now. */
  get active(): number {
    return this.inFlight.size;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.wake();
  }

  /** New work, or a free slot: look at the store now. */
  wake(): void {
    if (!this.started || this.stopped) return;
    if (this.pumping !== undefined) {
      this.again = true;
      return;
    }
    this.pumping = this.pump().finally(() => {
      this.pumping = undefined;
      if (this.again) this.wake();
    });
  }

  /** Takes no more deliveries, waits for the attempts in flight and writes their outcomes. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.pumping;
    if (this.inFlight.size > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve;
      });
    }
    await this.flushing;
  }

  private room(source: string, free: number): number {
    return Math.min(free, this.sourceCap - (this.perSource.get(source) ?? 0));
  }

  private async pump(): Promise<void> {
    try {
      let more = true;
      while (more && !this.stopped) {
        this.again = false;
        more = false;
        // Read once per round: the list changes when sources are switched on or off.
        const sources = this.sources;
        // Sources take turns, starting one further each round, so each gets its share of the slots.
        const start = this.turn++ % Math.max(1, sources.length);
        for (let k = 0; k < sources.length; k++) {
          const source = sources[(start + k) % sources.length]!;
          const free = this.options.concurrency - this.inFlight.size;
          if (free <= 0) break;
          const room = this.room(source, free);
          if (room <= 0) continue;
          // A fair share per round when several sources wait; the next round hands out the rest.
          let share = Math.max(1, Math.min(room, Math.ceil(free / (sources.length - k))));
          const now = this.clock.now();
          // Rate limits: no more claims than attempts may start; the rest stays due in the store.
          const allowed = this.targets.get(source)?.room?.(now, share);
          if (allowed !== undefined && allowed.count < share) {
            if (allowed.count <= 0) {
              // A time already past would spin the loop: the target wakes it itself then (WebhookDestination's onRateSlots).
              if (allowed.readyAt !== undefined && allowed.readyAt > now) this.rateReady.set(source, allowed.readyAt);
              continue;
            }
            share = allowed.count;
          }
          this.claimedAt.set(source, now);
          const due = await this.store.claim(source, now, share, this.lease);
          for (const delivery of due) {
            // Claimed again while its attempt still runs here (an attempt longer than the lease):
            // the attempt in flight settles it.
            if (!this.inFlight.has(delivery.id)) this.launch(delivery, now);
          }
          if (this.stopped) return;
          if (due.length === share) more = true;
        }
        if (this.again) more = true;
        if (this.inFlight.size >= this.options.concurrency) more = false;
      }
      if (!this.stopped) await this.sleepUntilNextDue();
    } catch (error) {
      log('delivery loop: store error %s; trying again in %d ms', (error as Error).message, this.idleWait);
      this.arm(this.idleWait);
    }
  }

  /**
   * Sleeps until the earliest due time among sources with room; a completion or new work wakes
   * it sooner. Idle, it asks the store each time. While attempts are in flight the loop runs after
   * every batch of completions, so a source's answer is reused for `NEXT_DUE_MAX_AGE` (one query
   * per source per second at most) and the loop wakes when it goes stale to ask again. Retries
   * this instance writes meanwhile are folded into the answer (see `flush`), so they start on
   * time; a delivery the answer cannot know of (a retry another instance wrote, a lease that ran
   * out after the answer) starts at most `NEXT_DUE_MAX_AGE` after its time. Sources without room
   * are not asked: a completion frees their slots and wakes the loop.
   */
  private async sleepUntilNextDue(): Promise<void> {
    const now = this.clock.now();
    let wait = this.idleWait;
    const free = this.options.concurrency - this.inFlight.size;
    const busy = this.inFlight.size > 0;
    if (free > 0) {
      for (const source of this.sources) {
        if (this.room(source, free) <= 0) continue;
        // Anything due by the source's last claim was claimed then; what fell due after it was not.
        const claimed = this.claimedAt.get(source) ?? now;
        let known = this.nextDue.get(source);
        if (!busy || known === undefined || now - known.fetchedAt >= NEXT_DUE_MAX_AGE) {
          known = { at: await this.store.nextDueAfter(source, claimed), fetchedAt: now };
          this.nextDue.set(source, known);
        }
        if (known.at !== undefined && known.at > claimed) wait = Math.min(wait, Math.max(0, known.at - now));
        if (busy) wait = Math.min(wait, known.fetchedAt + NEXT_DUE_MAX_AGE - now);
      }
    }
    // Due deliveries a rate limit held back: look again when it allows.
    for (const [source, at] of this.rateReady) {
      this.rateReady.delete(source);
      if (this.sources.includes(source)) wait = Math.min(wait, Math.max(0, at - now));
    }
    // Counted from `now`: the time the store took to answer is part of the wait, not added to it.
    this.arm(Math.max(0, now + wait - this.clock.now()));
  }

  private arm(ms: number): void {
    if (this.stopped) return;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.wake();
    }, ms);
  }

  private launch(delivery: PendingDelivery, now: number): void {
    this.inFlight.add(delivery.id);
    this.perSource.set(delivery.source, (this.perSource.get(delivery.source) ?? 0) + 1);
    const target = this.targets.get(delivery.source);
    // `id` is the Standard Webhooks webhook-id: the messageId, stable across retries (random per delete notice).
    const state: AttemptState = { attempt: delivery.attempts + 1, firstAttemptAt: delivery.firstAttemptAt ?? now, id: delivery.messageId };
    // Switched off (or removed) between the claim and now: handed back due at once, not attempted,
    // and it waits in the store until the destination is on again.
    const attempt: Promise<AttemptResult> =
      target === undefined ? Promise.resolve({ status: 'retry', attempt: state.attempt, nextAttemptAt: now, outcomes: [] }) : target.attempt(delivery.body, state);
    attempt
      .catch((error: unknown): AttemptResult => {
        // attempt() never rejects; should it ever, look again later rather than lose the delivery.
        log('delivery %d: attempt threw %s', delivery.id, (error as Error).message);
        return { status: 'retry', attempt: state.attempt, nextAttemptAt: this.clock.now() + BROKEN_ATTEMPT_DELAY, outcomes: [] };
      })
      .then((result) => {
        const report: AttemptReport = {
          id: delivery.id,
          source: delivery.source,
          kind: delivery.kind,
          messageId: delivery.messageId,
          createdAt: delivery.createdAt,
          result,
        };
        this.settle(outcomeOf(delivery, state, result, this.clock.now()), report);
      });
  }

  private settle(outcome: DeliveryOutcome, report: AttemptReport): void {
    this.outcomes.push({ outcome, report });
    if (this.flushQueued) return;
    this.flushQueued = true;
    // Outcomes that arrive in the same turn share one transaction.
    setImmediate(() => {
      this.flushQueued = false;
      const previous = this.flushing ?? Promise.resolve();
      this.flushing = previous.then(() => this.flush());
    });
  }

  /** Never rejects: a failure here must not stop the loop or leave slots taken. */
  private async flush(): Promise<void> {
    const batch = this.outcomes.splice(0);
    if (batch.length === 0) return;
    try {
      const { stale } = await this.store.record(batch.map((b) => b.outcome));
      if (stale.length > 0) log('%d outcomes not written: finished already, or the lease went to another claim', stale.length);
    } catch (error) {
      // Left pending in the store: attempted again once the lease ends (at-least-once), never lost.
      log('could not record %d outcomes: %s', batch.length, (error as Error).message);
    }
    const now = this.clock.now();
    for (const { outcome, report } of batch) {
      this.inFlight.delete(outcome.id);
      this.perSource.set(report.source, (this.perSource.get(report.source) ?? 1) - 1);
      // A retry written now may be due before the store's last answer (or that answer is past): wake for it.
      const known = this.nextDue.get(report.source);
      if (outcome.status === 'retry' && known !== undefined && (known.at === undefined || known.at <= now || outcome.nextAttemptAt < known.at)) {
        known.at = outcome.nextAttemptAt;
      }
    }
    for (const { report } of batch) {
      log('delivery %d (%s %s) attempt %d: %s', report.id, report.source, report.kind, report.result.attempt, report.result.status);
      try {
        this.onAttempt(report);
      } catch (error) {
        this.options.onError?.(error instanceof Error ? error : new Error(String(error)));
      }
    }
    if (this.inFlight.size === 0 && this.drained !== undefined) this.drained();
    this.wake();
  }
}

function outcomeOf(delivery: PendingDelivery, state: AttemptState, result: AttemptResult, now: number): DeliveryOutcome {
  switch (result.status) {
    case 'delivered':
      return { id: delivery.id, lease: delivery.lease, status: 'delivered', attempts: state.attempt, firstAttemptAt: state.firstAttemptAt, at: now };
    case 'failed':
      return { id: delivery.id, lease: delivery.lease, status: 'failed', attempts: state.attempt, firstAttemptAt: state.firstAttemptAt, at: now, reason: result.reason };
    case 'retry': {
      // No outcome means nothing was sent (the destination was closing): not an attempt.
      const sent = result.outcomes.length > 0;
      return {
        id: delivery.id,
        lease: delivery.lease,
        status: 'retry',
        attempts: sent ? state.attempt : delivery.attempts,
        firstAttemptAt: sent ? state.firstAttemptAt : delivery.firstAttemptAt,
        nextAttemptAt: result.nextAttemptAt,
        error: summarize(result),
      };
    }
  }
}

/** "HTTP 503 from http://host/path, ERR_TIMEOUT from ...": statuses and codes, never bodies. */
function summarize(result: AttemptResult): string {
  return result.outcomes.map((o) => `${o.status !== undefined ? `HTTP ${o.status}` : (o.error?.code ?? 'error')} from ${o.url}`).join(', ');
}
