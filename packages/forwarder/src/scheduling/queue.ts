import { randomUUID } from 'node:crypto';
import createDebug from 'debug';
import type { Clock, TimerHandle } from 'eventrelay/internal';
import type { DeliveryTarget, DeliveryTargets } from '../delivery/target';
import type { AcceptLease, ForwarderStore, PendingDelivery } from '../store/contract';
import { Attempts } from './attempt';
import { Batching } from './batching';
import { Claiming } from './claiming';
import { HandOver } from './hand-over';
import { InFlight } from './in-flight';
import type { OutcomeStep } from './outcome';
import { Recording } from './recording';
import type { LoopSignal } from './recording';

export type { AttemptReport } from './report';

export type { DeliveryTarget, DeliveryTargets } from '../delivery/target';

const log = createDebug('eventrelay:forwarder');

function asTargets(targets: ReadonlyMap<string, DeliveryTarget> | DeliveryTargets): DeliveryTargets {
  if (!(targets instanceof Map)) return targets as DeliveryTargets;
  const map = targets as ReadonlyMap<string, DeliveryTarget>;
  const sources = [...map.keys()];
  return { sources, get: (source) => map.get(source) };
}

export interface SchedulerOptions {
  /** Attempts in flight at once, over all sources: requests at the receivers, from this instance. */
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
  /** Called with a failure of the loop that is not the store's (an outcome step that threw). */
  readonly onError?: (error: Error) => void;
  /** Called with a failure of the store while claiming (the loop tries again after `idleWait`). */
  readonly onStoreError?: (error: Error) => void;
}

const DEFAULTS = { idleWait: 5000, leaseMs: 30_000 } as const;

/** The outcome step of a loop built without one: reports go nowhere. */
const NO_OUTCOME: OutcomeStep = { recorded: () => {} };

/**
 * The queue step of a batch's path, and the loop that drives the steps after it: claims due deliveries from the store with a lease, source by source in turn
 * (at most `concurrency` in flight, at most `sourceConcurrency` per source), makes one attempt each
 * through the source's destination, and writes the outcome back with the lease's token: done,
 * failed, or the next attempt time the destination computed. A claimed delivery is reserved for
 * this instance until its outcome is written or the lease runs out, so no two live instances
 * attempt it at once; if the process dies first, the store still has it pending and it is
 * attempted again once the lease ends (at-least-once). Deliveries of a source without a
 * destination (removed from the config, or switched off) are left pending, visible in the queue
 * depth.
 *
 * The steps live apart, each built here with what it needs: `Claiming` (what the store may have
 * due, and the claims, never more than the free slots) and `HandOver` (deliveries leased at
 * acceptance, `handOff`/`adopt`, at most `concurrency` beyond the slots) make the queue;
 * `Attempts` (attempt.ts) sends; `Recording` (recording.ts) writes the outcomes in batches and
 * tells them to the outcome step. This class runs the loop, and `launchDue` is the one place where
 * leased deliveries become attempts.
 *
 * A delivery that becomes due while the loop sleeps starts on time when the loop knows its time
 * (a retry this instance scheduled, or a time the store gave), and at most `NEXT_DUE_MAX_AGE`
 * (1 s) late otherwise (a retry another instance wrote, a lease that ran out), even while other
 * attempts hang in flight; see `sleepUntilNextDue`.
 */
export class Scheduler {
  private readonly inFlight = new InFlight();
  private readonly targets: DeliveryTargets;
  private turn = 0;
  /** Per source held back by its rate limits: when they allow attempts again. */
  private readonly rateReady = new Map<string, number>();
  private readonly claiming: Claiming;
  private readonly handOver: HandOver;
  private readonly recording: Recording;
  private readonly attempts: Attempts;
  private readonly batching: Batching;
  private readonly idleWait: number;
  private readonly owner: string;
  private readonly leaseMs: number;
  private timer: TimerHandle | undefined;
  private pumping: Promise<void> | undefined;
  private again = false;
  /** A run of the loop is queued for the next turn (slots freed by outcomes that wait). */
  private kickQueued = false;
  private stopped = false;
  private started = false;
  private drained: (() => void) | undefined;
  private startedOn = 0;

  constructor(
    store: ForwarderStore,
    targets: ReadonlyMap<string, DeliveryTarget> | DeliveryTargets,
    private readonly clock: Clock,
    private readonly options: SchedulerOptions,
    private readonly outcome: OutcomeStep = NO_OUTCOME,
  ) {
    this.idleWait = options.idleWait ?? DEFAULTS.idleWait;
    this.owner = options.owner ?? randomUUID();
    this.leaseMs = options.leaseMs ?? DEFAULTS.leaseMs;
    this.targets = asTargets(targets);
    this.claiming = new Claiming(store, { owner: this.owner, ms: this.leaseMs });
    // Held and in flight: what this instance starts in about a second, at least its slots plus
    // as many again. More would be a backlog no other instance may touch until the leases end;
    // less would send a steady load through the store's claims for nothing.
    this.handOver = new HandOver(options.holdMs ?? 0, () => Math.max(2 * options.concurrency, this.inFlight.lastSecond(this.clock.now())));
    const loop: LoopSignal = {
      stopping: () => this.stopped,
      kick: () => {
        if (this.inFlight.size === 0 && this.recording.size === 0 && this.drained !== undefined) this.drained();
        this.kick();
      },
      kickNextTurn: () => this.kickNextTurn(),
    };
    const told = { step: outcome, onError: (error: Error) => options.onError?.(error) };
    this.recording = new Recording(store, clock, options.concurrency, this.claiming, this.inFlight, told, loop);
    this.batching = new Batching(store, this.targets, clock, { owner: this.owner, ms: this.leaseMs }, this.recording, {
      // A batch stored while its source's slots are taken (or while stopping) waits in the store, due.
      launch: (batches, now) => {
        const back: PendingDelivery[] = [];
        for (const batch of batches) {
          if (!this.stopped && this.room(batch.source, this.free) > 0) this.attempts.start(batch, now);
          else back.push(batch);
        }
        if (back.length > 0) this.recording.handBack(back, true);
      },
      kick: () => this.kick(),
      failed: (error) => told.onError(error),
    });
    this.attempts = new Attempts(this.targets, clock, this.inFlight, this.recording, this.batching);
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

  /** When the loop started, epoch ms; 0 before. */
  get startedAt(): number {
    return this.startedOn;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.startedOn = this.clock.now();
    this.wake();
  }

  /**
   * The lease under which a commit storing deliveries of `source` accepted at `now` should hand
   * them over to this instance (`AcceptLease`), or undefined to store them unleased, to be
   * claimed: while the loop runs, has room to start them soon (see `HandOver`), and the store has
   * nothing of the source due that it has not claimed.
   */
  handOff(source: string, now: number): AcceptLease | undefined {
    if (!this.started || this.stopped || this.handOver.room(this.inFlight.size) <= 0) return undefined;
    if (!this.claiming.caughtUpWith(source, now) || !this.sources.includes(source)) return undefined;
    return { owner: this.owner, ms: this.leaseMs, now };
  }

  /**
   * Deliveries a commit leased with `handOff`'s `lease`: attempted from here, in order, without
   * a claim. Those past the room (a commit of many) go back to the store at once, for any
   * instance to claim. `incarnation`: the id of the source the commit stored them for; when
   * another is served under the name by now (deleted and made again), they go back too.
   */
  adopt(deliveries: readonly PendingDelivery[], lease: AcceptLease, incarnation?: string): void {
    if (deliveries.length === 0) return;
    const replaced = incarnation !== undefined && this.targets.incarnation?.(deliveries[0]!.source) !== incarnation;
    const rest = this.stopped || replaced ? deliveries : this.handOver.adopt(deliveries, lease, this.inFlight.size);
    if (rest.length > 0) this.recording.handBack(rest);
    this.kick();
  }

  /** Deliveries of `source` were stored unleased: claim them. */
  stored(source: string): void {
    this.claiming.notCaughtUp(source);
    this.kick();
  }

  /**
   * The source served under `source` was deleted (and perhaps made again): what is held for it
   * goes back to the store, where the deletion gave it up. A claim running now is checked when it
   * returns (see `pump`); attempts in flight finish, and the store records a delivered one.
   */
  forget(source: string): void {
    const held = [...this.handOver.drop(source), ...this.batching.drop(source)];
    if (held.length > 0) this.recording.handBack(held);
  }

  /** New work in the store: look at it now. */
  wake(): void {
    this.claiming.notCaughtUp();
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

  /** Runs the loop in the next turn, once however many outcomes of this turn ask. */
  private kickNextTurn(): void {
    if (this.kickQueued) return;
    this.kickQueued = true;
    setImmediate(() => {
      this.kickQueued = false;
      this.kick();
    });
  }

  /** Takes no more deliveries, waits for the attempts in flight and writes their outcomes. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.pumping;
    // Not attempted here: back to the store, for the next start or another instance.
    const held = [...this.handOver.drain(), ...this.batching.drop()];
    if (held.length > 0) this.recording.handBack(held);
    // Batches closed before: stored, and given back (stopping) rather than started.
    await this.batching.settled();
    this.recording.queueFlush();
    if (this.inFlight.size > 0 || this.recording.size > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve;
      });
    }
    await this.recording.settled();
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
    return Math.min(free, this.sourceCap - this.inFlight.of(source));
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
          // A source that batches claims for its open batch, not for slots (its batches take those).
          // Its calls wait in memory for nothing while its slots are taken: claimed once one is free.
          let batchRoom = this.batching.room(source);
          if (batchRoom !== undefined && this.room(source, this.free) <= 0) batchRoom = 0;
          if (batchRoom !== undefined) {
            if (batchRoom <= 0) continue;
            let again = this.claimFor(source, batchRoom, this.clock.now());
            if (typeof again !== 'boolean') again = await again;
            if (this.stopped) return;
            if (again) more = true;
            continue;
          }
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
          // More due, or work stored while the claim ran, which it may not have seen: claim again.
          let again = this.claimFor(source, share, now);
          if (typeof again !== 'boolean') again = await again;
          if (this.stopped) return;
          if (again) more = true;
        }
        if (this.again) more = true;
        if (this.free <= 0) more = false;
      }
      if (!this.stopped) await this.sleepUntilNextDue();
    } catch (error) {
      log('delivery loop: store error %s; trying again in %d ms', (error as Error).message, this.idleWait);
      this.options.onStoreError?.(error instanceof Error ? error : new Error(String(error)));
      this.arm(this.idleWait);
    }
  }

  /**
   * Takes up to `count` deliveries of `source` due at `now` and starts them: handed-over ones
   * first (the store has nothing older of the source, see handOff), then a claim, which is due at
   * least once a second (see Claiming) and keeps a slot for itself. Answers whether there may be
   * more; a promise only when it claims.
   */
  private claimFor(source: string, count: number, now: number): boolean | Promise<boolean> {
    const mayHaveDue = this.claiming.mayHaveDue(source, now);
    let share = count;
    if (this.handOver.has(source)) {
      const taken = this.handOver.take(source, mayHaveDue && share > 1 ? share - 1 : share, now);
      if (taken.late.length > 0) this.recording.handBack(taken.late);
      share -= this.launchDue(taken.start, now);
    }
    if (share <= 0 || !mayHaveDue) return this.handOver.has(source);
    return this.claimNow(source, share, now);
  }

  private async claimNow(source: string, share: number, now: number): Promise<boolean> {
    this.recording.watch(true);
    try {
      const incarnation = this.targets.incarnation?.(source);
      const claimed = await this.claiming.claim(source, now, share);
      // Claimed for a source deleted meanwhile (and perhaps made again): not for its successor.
      if (this.targets.incarnation?.(source) === incarnation) this.launchDue(claimed.due, now);
      else if (claimed.due.length > 0) this.recording.handBack(claimed.due);
      return claimed.more;
    } finally {
      this.recording.watch(false);
    }
  }

  /**
   * Starts an attempt for each of `deliveries` (leased to this instance, due, of one source,
   * oldest first) and returns how many started: the one place where the loop decides which
   * deliveries it holds become requests. One claimed again while its attempt still runs here (an
   * attempt longer than the lease), or while its outcome is written (or was, during the claim),
   * is left to that attempt.
   */
  private launchDue(deliveries: readonly PendingDelivery[], now: number): number {
    let started = 0;
    for (const delivery of deliveries) {
      if (this.inFlight.has(delivery.id) || this.recording.has(delivery.id) || this.batching.has(delivery.id)) continue;
      this.attempts.start(delivery, now);
      started++;
    }
    return started;
  }

  /**
   * Sleeps until the earliest due time among sources with room; a completion or new work wakes
   * it sooner. The loop runs after every batch of completions, and under a steady load it goes
   * idle between batches as often, so a source's answer is reused for `NEXT_DUE_MAX_AGE` (one
   * query per source per second at most, rather than one per batch). Retries this instance
   * writes meanwhile are folded into the answer (see `written`), so they start on time. A
   * delivery the answer cannot know of (a retry another instance wrote, a lease that ran out after
   * the answer) starts at most `NEXT_DUE_MAX_AGE` after its time while attempts are in flight (the
   * loop wakes when the answer goes stale, to ask again), and idle at most `idleWait` after the
   * answer, as when it asked on going idle. Sources without room are not asked: a completion
   * frees their slots and wakes the loop.
   */
  private async sleepUntilNextDue(): Promise<void> {
    const now = this.clock.now();
    let wait = this.idleWait;
    const free = this.free;
    const busy = this.inFlight.size > 0;
    if (free > 0) {
      for (const source of this.sources) {
        if (this.room(source, free) <= 0 || this.batching.room(source) === 0) continue;
        wait = await this.claiming.sleepFor(source, now, wait, busy, this.idleWait);
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
}
