import { randomUUID } from 'node:crypto';
import createDebug from 'debug';
import type { Clock, TimerHandle } from 'eventrelay/internal';
import type { AttemptResult, AttemptState } from '../delivery/destination';
import type { DeliveryTarget, DeliveryTargets } from '../delivery/target';

export type { DeliveryTarget, DeliveryTargets } from '../delivery/target';
import type { AcceptLease, DeliveryOutcome, ForwarderStore, LeaseRequest, PendingDelivery } from '../store/contract';

const log = createDebug('eventrelay:forwarder');

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
  /**
   * How long a delivery handed over at acceptance (see `handOff`) may wait here for a free slot,
   * in ms from its receipt: its lease minus an attempt's longest duration, so that an attempt
   * started in time ends within the lease. Past it, it goes back to the store for a claim. 0 (the
   * default): nothing is handed over, every delivery is claimed.
   */
  readonly holdMs?: number;
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
  /**
   * The store did not take the outcome: the delivery was finished meanwhile (its source deleted,
   * or delivered through another claim) or its lease went to another claim. The request was made;
   * what it says about the delivery is out of date.
   */
  readonly stale?: boolean;
}

const DEFAULTS = { idleWait: 5000, leaseMs: 30_000 } as const;

/** Delay before a delivery is looked at again when attempt() broke its promise never to reject, in ms. */
const BROKEN_ATTEMPT_DELAY = 60_000;

/**
 * Most body characters of handed-over deliveries held at once (16 Mi, some 40,000 deliveries of
 * 400 bytes); past it, accepted deliveries are stored unleased and claimed.
 */
const HOLD_CHARS = 16 * 1024 * 1024;

/**
 * While attempts are in flight, an outcome waits up to this many ms for others to share its
 * write, or until half of `concurrency` wait: fewer, larger writes (under a burst a write had held
 * 21 outcomes on average; together, 0.962 times the CPU per message on PostgreSQL, 0.959 on
 * SQLite, side by side). Idle or stopping: written at once.
 */
const RECORD_WAIT_MS = 5;

/** A first-in first-out queue: `shift` in constant time, however long (an array's shift copies a large array). */
class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head]!;
    this.items[this.head++] = undefined as T;
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  drain(): T[] {
    const rest = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    return rest;
  }
}

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
 *
 * Hand-over (with `holdMs`): the commit that stores an accepted call may lease its delivery to
 * this instance at once (`handOff`, then `adopt`), which then attempts it from memory, oldest
 * first, without a claim: no claim statement, no row read back. It is handed over only while
 * the store has nothing of the source due that this loop has not claimed (so it never passes an
 * older delivery) and while at most `HOLD_CHARS` of bodies are held; one that waited past
 * `holdMs` for a slot, or is held when the loop stops, goes back to the store, due as before.
 */
export class Scheduler {
  private readonly inFlight = new Set<number>();
  /**
   * Deliveries whose attempt ended, with their outcome not written yet: the attempt's slot is free
   * (slots bound requests to receivers), the delivery is not claimed again meanwhile.
   */
  private readonly recording = new Set<number>();
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
  /** Deliveries handed over at acceptance, per source, oldest first, with the time each must start by. */
  private readonly held = new Map<string, Fifo<{ delivery: PendingDelivery; until: number }>>();
  /** Body characters of the held deliveries. */
  private heldChars = 0;
  private readonly holdMs: number;
  /**
   * Per source whose last claim found every due delivery (with nothing stored unleased since),
   * when that was: no claim is made until `nextDue` says something is due, or `NEXT_DUE_MAX_AGE`
   * passed (a delivery another instance stored unleased and left, which no due time announces).
   */
  private readonly caughtUp = new Map<string, number>();
  /**
   * Counts the times `caughtUp` was unset (new work stored, given back or due): a claim that began
   * before the last of them may have missed that work, so it cannot set `caughtUp` itself.
   */
  private invalidations = 0;
  private readonly idleWait: number;
  private readonly lease: LeaseRequest;
  private timer: TimerHandle | undefined;
  private pumping: Promise<void> | undefined;
  private again = false;
  private flushing: Promise<void> | undefined;
  private flushQueued = false;
  /** An outcome's wait for others (RECORD_WAIT_MS). */
  private recordTimer: TimerHandle | undefined;
  /** A run of the loop is queued for the next turn (slots freed by outcomes that wait). */
  private kickQueued = false;
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
    this.holdMs = options.holdMs ?? 0;
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

  /**
   * The lease under which a commit storing deliveries of `source` accepted at `now` should hand
   * them over to this instance (`AcceptLease`), or undefined to store them unleased, to be
   * claimed: while the loop runs, holds less than its bound, and the store has nothing of the
   * source due that it has not claimed.
   */
  handOff(source: string, now: number): AcceptLease | undefined {
    if (!this.started || this.stopped || this.holdMs <= 0 || this.heldChars >= HOLD_CHARS) return undefined;
    if (!this.caughtUp.has(source) || this.knownDue(source, now) || !this.sources.includes(source)) return undefined;
    return { ...this.lease, now };
  }

  /** Deliveries a commit leased with `handOff`'s `lease`: attempted from here, in order, without a claim. */
  adopt(deliveries: readonly PendingDelivery[], lease: AcceptLease): void {
    if (deliveries.length === 0) return;
    if (this.stopped) {
      this.handBack(deliveries);
      return;
    }
    const until = lease.now + this.holdMs;
    for (const delivery of deliveries) {
      let queue = this.held.get(delivery.source);
      if (queue === undefined) this.held.set(delivery.source, (queue = new Fifo()));
      queue.push({ delivery, until });
      this.heldChars += delivery.body.length;
    }
    this.kick();
  }

  /** Deliveries of `source` were stored unleased: claim them. */
  stored(source: string): void {
    this.notCaughtUp(source);
    this.kick();
  }

  /** New work of `source` (of every source without one) may be in the store: the next round claims. */
  private notCaughtUp(source?: string): void {
    this.invalidations++;
    if (source === undefined) this.caughtUp.clear();
    else this.caughtUp.delete(source);
  }

  /** Whether the store may have deliveries of `source` due at `now` that no claim of this loop took. */
  private storeMayHaveDue(source: string, now: number): boolean {
    const since = this.caughtUp.get(source);
    return since === undefined || now - since >= NEXT_DUE_MAX_AGE || this.knownDue(source, now);
  }

  /** Whether the store's last answer (or a retry written here) makes a delivery of `source` due by `now`. */
  private knownDue(source: string, now: number): boolean {
    const at = this.nextDue.get(source)?.at;
    return at !== undefined && at <= now;
  }

  /**
   * Starts up to `count` held deliveries of `source`, oldest first; those that waited past their
   * time go back to the store instead. Returns how many started.
   */
  private launchHeld(source: string, count: number, now: number): number {
    const queue = this.held.get(source);
    if (queue === undefined) return 0;
    let started = 0;
    const late: PendingDelivery[] = [];
    while (started < count) {
      const next = queue.shift();
      if (next === undefined) break;
      this.heldChars -= next.delivery.body.length;
      if (now > next.until) late.push(next.delivery);
      else if (!this.inFlight.has(next.delivery.id) && !this.recording.has(next.delivery.id)) {
        this.launch(next.delivery, now);
        started++;
      }
    }
    if (queue.length === 0) this.held.delete(source);
    if (late.length > 0) this.handBack(late);
    return started;
  }

  /**
   * Gives held deliveries back to the store as they were (due at their time, unleased, no attempt
   * counted), for any instance to claim; this loop claims them as it claims any other.
   */
  private handBack(deliveries: readonly PendingDelivery[]): void {
    const outcomes = deliveries.map(
      (d): DeliveryOutcome => ({ id: d.id, lease: d.lease, status: 'retry', attempts: d.attempts, firstAttemptAt: d.firstAttemptAt, nextAttemptAt: d.nextAttemptAt }),
    );
    const previous = this.flushing ?? Promise.resolve();
    this.flushing = previous.then(async () => {
      try {
        await this.store.record(outcomes);
      } catch (error) {
        // Still leased: due again when the lease ends, never lost.
        log('could not hand back %d deliveries: %s', outcomes.length, (error as Error).message);
      }
      // Due in the store now (or at its lease's end): claimed like any other.
      for (const d of deliveries) this.notCaughtUp(d.source);
      this.kick();
    });
  }

  /** New work in the store: look at it now. */
  wake(): void {
    this.notCaughtUp();
    this.kick();
  }

  /** A free slot, a held delivery or a due time: run the loop (it claims only what may be due). */
  private kick(): void {
    if (!this.started || this.stopped) return;
    if (this.pumping !== undefined) {
      this.again = true;
      return;
    }
    this.pumping = this.pump().finally(() => {
      this.pumping = undefined;
      if (this.again) this.kick();
    });
  }

  /** Takes no more deliveries, waits for the attempts in flight and writes their outcomes. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.pumping;
    // Not attempted here: back to the store, for the next start or another instance.
    const held = [...this.held.values()].flatMap((queue) => queue.drain().map((h) => h.delivery));
    this.held.clear();
    this.heldChars = 0;
    if (held.length > 0) this.handBack(held);
    this.queueFlush();
    if (this.inFlight.size > 0 || this.recording.size > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve;
      });
    }
    await this.flushing;
  }

  /**
   * Slots for new attempts: at most `concurrency` requests in flight, and at most `concurrency`
   * more attempts whose outcome is still being written. What an instance killed at any moment
   * sent and did not record (and another instance sends again) stays within twice the concurrency.
   */
  private get free(): number {
    const { concurrency } = this.options;
    return Math.min(concurrency - this.inFlight.size, 2 * concurrency - this.inFlight.size - this.recording.size);
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
          const free = this.free;
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
          // Handed-over deliveries first: the store has nothing older of the source (see handOff).
          // A claim is due at least once a second, though (see caughtUp): it keeps a slot for it.
          const mayHaveDue = this.storeMayHaveDue(source, now);
          const started = this.launchHeld(source, mayHaveDue && share > 1 ? share - 1 : share, now);
          share -= started;
          if (share <= 0 || !mayHaveDue) {
            if (this.held.has(source)) more = true;
            continue;
          }
          this.claimedAt.set(source, now);
          const invalidations = this.invalidations;
          const due = await this.store.claim(source, now, share, this.lease);
          for (const delivery of due) {
            // Claimed again while its attempt still runs here (an attempt longer than the lease):
            // the attempt in flight settles it.
            if (!this.inFlight.has(delivery.id) && !this.recording.has(delivery.id)) this.launch(delivery, now);
          }
          if (this.stopped) return;
          if (due.length === share || this.invalidations !== invalidations) {
            // More due, or work stored while the claim ran, which it may not have seen: claim again.
            more = true;
          } else {
            // Every delivery due by `now` is claimed: none to claim until the next due time.
            this.caughtUp.set(source, now);
            const known = this.nextDue.get(source);
            if (known?.at !== undefined && known.at <= now) known.at = undefined;
          }
        }
        if (this.again) more = true;
        if (this.free <= 0) more = false;
      }
      if (!this.stopped) await this.sleepUntilNextDue();
    } catch (error) {
      log('delivery loop: store error %s; trying again in %d ms', (error as Error).message, this.idleWait);
      this.arm(this.idleWait);
    }
  }

  /**
   * Sleeps until the earliest due time among sources with room; a completion or new work wakes
   * it sooner. The loop runs after every batch of completions, and under a steady load it goes
   * idle between batches as often, so a source's answer is reused for `NEXT_DUE_MAX_AGE` (one
   * query per source per second at most; it was one per batch when idle, measured at 135 a second
   * at 1,500 messages/s). Retries this instance writes meanwhile are folded into the answer (see
   * `flush`), so they start on time. A delivery the answer cannot know of (a retry another
   * instance wrote, a lease that ran out after the answer) starts at most `NEXT_DUE_MAX_AGE` after
   * its time while attempts are in flight (the loop wakes when the answer goes stale, to ask
   * again), and idle at most `idleWait` after the answer, as when it asked on going idle. Sources
   * without room are not asked: a completion frees their slots and wakes the loop.
   */
  private async sleepUntilNextDue(): Promise<void> {
    const now = this.clock.now();
    let wait = this.idleWait;
    const free = this.free;
    const busy = this.inFlight.size > 0;
    if (free > 0) {
      for (const source of this.sources) {
        if (this.room(source, free) <= 0) continue;
        // Anything due by the source's last claim was claimed then; what fell due after it was not.
        const claimed = this.claimedAt.get(source) ?? now;
        let known = this.nextDue.get(source);
        if (known === undefined || now - known.fetchedAt >= NEXT_DUE_MAX_AGE) {
          known = { at: await this.store.nextDueAfter(source, claimed), fetchedAt: now };
          this.nextDue.set(source, known);
        }
        if (known.at !== undefined && known.at > claimed) wait = Math.min(wait, Math.max(0, known.at - now));
        wait = Math.min(wait, known.fetchedAt + (busy ? NEXT_DUE_MAX_AGE : this.idleWait) - now);
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
      this.kick();
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
    // One reaction for either ending: no chained promise per attempt.
    attempt.then(
      (result) => this.attempted(delivery, state, result),
      (error: unknown) => {
        // attempt() never rejects; should it ever, look again later rather than lose the delivery.
        log('delivery %d: attempt threw %s', delivery.id, (error as Error).message);
        this.attempted(delivery, state, { status: 'retry', attempt: state.attempt, nextAttemptAt: this.clock.now() + BROKEN_ATTEMPT_DELAY, outcomes: [] });
      },
    );
  }

  private attempted(delivery: PendingDelivery, state: AttemptState, result: AttemptResult): void {
    const report: AttemptReport = {
      id: delivery.id,
      source: delivery.source,
      kind: delivery.kind,
      messageId: delivery.messageId,
      createdAt: delivery.createdAt,
      result,
    };
    this.settle(outcomeOf(delivery, state, result, this.clock.now()), report);
  }

  private settle(outcome: DeliveryOutcome, report: AttemptReport): void {
    // The request is over: its slot goes to the next attempt while the outcome is written.
    this.inFlight.delete(outcome.id);
    this.perSource.set(report.source, (this.perSource.get(report.source) ?? 1) - 1);
    this.recording.add(outcome.id);
    this.outcomes.push({ outcome, report });
    if (this.flushQueued) return;
    // More outcomes come soon while attempts are in flight: wait for them, briefly. The slot is
    // free meanwhile: the loop runs in the next turn to fill it, as when the outcome goes at once.
    if (this.inFlight.size > 0 && !this.stopped && this.outcomes.length < Math.max(1, this.options.concurrency >> 1)) {
      this.recordTimer ??= this.clock.setTimeout(() => {
        this.recordTimer = undefined;
        this.queueFlush();
      }, RECORD_WAIT_MS);
      this.kickNextTurn();
      return;
    }
    this.queueFlush();
  }

  /** Runs the loop in the next turn, once however many outcomes of this turn ask. */
  private kickNextTurn(): void {
    if (this.kickQueued) return;
    this.kickQueued = true;
    setImmediate(() => {
      this.kickQueued = false;
      this.kick();
    });
  }

  private queueFlush(): void {
    if (this.recordTimer !== undefined) this.clock.clearTimeout(this.recordTimer);
    this.recordTimer = undefined;
    if (this.flushQueued || this.outcomes.length === 0) return;
    this.flushQueued = true;
    // Outcomes that arrive in the same turn share one transaction.
    setImmediate(() => {
      this.flushQueued = false;
      const previous = this.flushing ?? Promise.resolve();
      this.flushing = previous.then(() => this.flush());
      this.kick();
    });
  }

  /** Never rejects: a failure here must not stop the loop or leave slots taken. */
  private async flush(): Promise<void> {
    const batch = this.outcomes.splice(0);
    if (batch.length === 0) return;
    let stale: ReadonlySet<number> = new Set();
    try {
      // By push, not Array#map: a list whose elements kind changes once this function is
      // optimized sends the store's reader of it back to the interpreter.
      const outcomes: DeliveryOutcome[] = [];
      for (const b of batch) outcomes.push(b.outcome);
      const recorded = await this.store.record(outcomes);
      if (recorded.stale.length > 0) log('%d outcomes not written: finished already, or the lease went to another claim', recorded.stale.length);
      stale = new Set(recorded.stale);
    } catch (error) {
      // Left pending in the store: attempted again once the lease ends (at-least-once), never lost.
      log('could not record %d outcomes: %s', batch.length, (error as Error).message);
    }
    const now = this.clock.now();
    for (const { outcome, report } of batch) {
      this.recording.delete(outcome.id);
      // A retry written now may be due before the store's last answer (or that answer is past): wake for it.
      const known = this.nextDue.get(report.source);
      if (outcome.status === 'retry' && known !== undefined && (known.at === undefined || known.at <= now || outcome.nextAttemptAt < known.at)) {
        known.at = outcome.nextAttemptAt;
      } else if (outcome.status === 'retry' && known === undefined) {
        this.notCaughtUp(report.source);
      }
    }
    for (const { report } of batch) {
      log('delivery %d (%s %s) attempt %d: %s', report.id, report.source, report.kind, report.result.attempt, report.result.status);
      try {
        this.onAttempt(stale.has(report.id) ? { ...report, stale: true } : report);
      } catch (error) {
        this.options.onError?.(error instanceof Error ? error : new Error(String(error)));
      }
    }
    if (this.inFlight.size === 0 && this.recording.size === 0 && this.drained !== undefined) this.drained();
    this.kick();
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
