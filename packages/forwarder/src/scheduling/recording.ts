import createDebug from 'debug';
import type { Clock, TimerHandle } from 'eventrelay/internal';
import type { AttemptResult, AttemptState, UrlOutcome } from '../delivery/destination';
import type { BatchMember, DeliveryOutcome, ForwarderStore, PendingDelivery } from '../store/contract';
import type { InFlight } from './in-flight';
import type { Claiming } from './claiming';
import type { OutcomeStep } from './outcome';
import type { AttemptReport } from './report';
import { reportOf } from './report';

const log = createDebug('eventrelay:forwarder');

/** Batches whose calls are kept after they were stored (storedBatches): about 100 calls each, a few MB at most. */
const KNOWN_BATCHES = 1024;

/** An outcome and its report, as written in one batch. */
export interface Written {
  readonly outcome: DeliveryOutcome;
  readonly report: AttemptReport;
}

/** What the recording step asks of the loop it serves. */
export interface LoopSignal {
  /** True once the loop is stopping: outcomes are written at once. */
  stopping(): boolean;
  /** Slots or work changed: run the loop now. */
  kick(): void;
  /** The same, in the next turn of the event loop (once however many ask). */
  kickNextTurn(): void;
}

/** Where written outcomes are told (`outcome.ts`), and where a failure of that step goes. */
export interface Told {
  readonly step: OutcomeStep;
  readonly onError: (error: Error) => void;
}

/**
 * While attempts are in flight, an outcome waits up to this many ms for others to share its
 * write, or until half of `concurrency` wait: fewer, larger writes, which cost less CPU per
 * message than one per outcome. Idle or stopping: written at once.
 */
const RECORD_WAIT_MS = 5;

/**
 * The recording step of a batch's path: each attempt's outcome written with its lease's token, in
 * batches (those that end in the same turn of the event loop, or within `RECORD_WAIT_MS` while
 * attempts are in flight, go to the store in one transaction, one write after another), then told
 * to the outcome step (`outcome.ts`). A delivery whose outcome is being written is `unwritten`:
 * its request is over, so its slot is free, but it is not claimed or started again meanwhile.
 */
export class Recording {
  /** Deliveries whose attempt ended, with their outcome not written yet. */
  private readonly unwritten = new Set<number>();
  /**
   * Deliveries whose outcome was written while a claim ran (`watch`): the claim may have read
   * them before the write (a lease that ran out meanwhile), and must not start them again.
   */
  private readonly writtenDuringClaim = new Set<number>();
  private watching = false;
  private readonly pending: Written[] = [];
  /** Outcomes of batch deliveries (batching.ts), written apart: they end their calls too. */
  private readonly pendingBatches: Written[] = [];
  /** The calls of the batches this instance stored, until their outcome ends them all (else they are read from the store). */
  private readonly batchCalls = new Map<number, readonly BatchMember[]>();
  private flushing: Promise<void> | undefined;
  private flushQueued = false;
  /** An outcome's wait for others (RECORD_WAIT_MS). */
  private recordTimer: TimerHandle | undefined;

  constructor(
    private readonly store: ForwarderStore,
    private readonly clock: Clock,
    private readonly concurrency: number,
    /** What the store may have due: retries written and ordered deliveries let go are news to it. */
    private readonly claiming: Claiming,
    private readonly inFlight: InFlight,
    private readonly told: Told,
    private readonly loop: LoopSignal,
  ) {}

  /** Whether `id`'s attempt ended here and its outcome is still being written, or was while the claim being watched ran. */
  has(id: number): boolean {
    return this.unwritten.has(id) || (this.watching && this.writtenDuringClaim.has(id));
  }

  /** A claim starts (`true`) or its deliveries were started (`false`): see `writtenDuringClaim`. */
  watch(on: boolean): void {
    this.watching = on;
    if (!on) this.writtenDuringClaim.clear();
  }

  get size(): number {
    return this.unwritten.size;
  }

  /**
   * Batch deliveries this instance stored, with their calls in body order: no read of them at
   * their first outcome. Kept for that outcome only, and for the newest KNOWN_BATCHES at most (a
   * batch split by a 413, or finished by another instance, has no outcome here).
   */
  storedBatches(batches: readonly PendingDelivery[], calls: ReadonlyMap<number, BatchMember>, members: readonly (readonly number[])[]): void {
    batches.forEach((batch, i) => this.batchCalls.set(batch.id, members[i]!.map((id) => calls.get(id)!)));
    for (const id of this.batchCalls.keys()) {
      if (this.batchCalls.size <= KNOWN_BATCHES) break;
      this.batchCalls.delete(id);
    }
  }

  /** A batch delivery's attempt ended: its outcome is written in the next turn, with the calls it ends. */
  addBatch(delivery: PendingDelivery, state: AttemptState, result: AttemptResult, report: AttemptReport): void {
    const outcome = outcomeOf(delivery, state, result, this.clock.now());
    this.unwritten.add(outcome.id);
    this.pendingBatches.push({ outcome, report });
    this.queueFlush();
  }

  /** An attempt ended: its outcome joins the next write. */
  add(delivery: PendingDelivery, state: AttemptState, result: AttemptResult, report: AttemptReport): void {
    const outcome = outcomeOf(delivery, state, result, this.clock.now());
    this.unwritten.add(outcome.id);
    this.pending.push({ outcome, report });
    if (this.flushQueued) return;
    // More outcomes come soon while attempts are in flight: wait for them, briefly. The slot is
    // free meanwhile: the loop runs in the next turn to fill it, as when the outcome goes at once.
    if (this.inFlight.size > 0 && !this.loop.stopping() && this.pending.length < Math.max(1, this.concurrency >> 1)) {
      this.recordTimer ??= this.clock.setTimeout(() => {
        this.recordTimer = undefined;
        this.queueFlush();
      }, RECORD_WAIT_MS);
      this.loop.kickNextTurn();
      return;
    }
    this.queueFlush();
  }

  /** Writes what waits in the next turn, without waiting for more. */
  queueFlush(): void {
    if (this.recordTimer !== undefined) this.clock.clearTimeout(this.recordTimer);
    this.recordTimer = undefined;
    if (this.flushQueued || (this.pending.length === 0 && this.pendingBatches.length === 0)) return;
    this.flushQueued = true;
    // Outcomes that arrive in the same turn share one transaction.
    setImmediate(() => {
      this.flushQueued = false;
      this.after(() => this.flush());
      this.loop.kick();
    });
  }

  /** Resolves once every write queued so far has ended. */
  settled(): Promise<void> {
    return this.flushing ?? Promise.resolve();
  }

  /**
   * Gives leased deliveries back to the store as they were (due at their time, unleased, no
   * attempt counted), for any instance to claim; this loop claims them as it claims any other.
   * `batches`: they are batch deliveries (`BatchStore`), due now.
   */
  handBack(deliveries: readonly PendingDelivery[], batches = false): void {
    const outcomes = deliveries.map(
      (d): DeliveryOutcome => ({ id: d.id, lease: d.lease, status: 'retry', attempts: d.attempts, firstAttemptAt: d.firstAttemptAt, nextAttemptAt: batches ? this.clock.now() : d.nextAttemptAt }),
    );
    this.after(async () => {
      try {
        if (batches) await this.store.batches.recordBatches(outcomes);
        else await this.store.record(outcomes);
      } catch (error) {
        // Still leased: due again when the lease ends, never lost.
        log('could not hand back %d deliveries: %s', outcomes.length, (error as Error).message);
      }
      // Due in the store now (or at its lease's end): claimed like any other.
      for (const d of deliveries) this.claiming.notCaughtUp(d.source);
      this.loop.kick();
    });
  }

  /** Writes run one after another: an outcome never overtakes an earlier one of the same delivery. */
  after(write: () => Promise<void>): void {
    const previous = this.flushing ?? Promise.resolve();
    this.flushing = previous.then(write);
  }

  /** Never rejects: a failure here must not stop the loop or leave slots taken. */
  private async flush(): Promise<void> {
    if (this.pendingBatches.length > 0) await this.flushBatches(this.pendingBatches.splice(0));
    const batch = this.pending.splice(0);
    if (batch.length === 0) return;
    let stale: ReadonlySet<number> = new Set();
    let released: readonly string[] = [];
    try {
      // By push, not Array#map: a list whose elements kind changes once this function is
      // optimized sends the store's reader of it back to the interpreter.
      const outcomes: DeliveryOutcome[] = [];
      for (const b of batch) outcomes.push(b.outcome);
      const recorded = await this.store.record(outcomes);
      if (recorded.stale.length > 0) log('%d outcomes not written: finished already, or the lease went to another claim', recorded.stale.length);
      stale = new Set(recorded.stale);
      released = recorded.released;
    } catch (error) {
      // Left pending in the store: attempted again once the lease ends (at-least-once), never lost.
      log('could not record %d outcomes: %s', batch.length, (error as Error).message);
    }
    for (const { outcome } of batch) {
      this.unwritten.delete(outcome.id);
      if (this.watching) this.writtenDuringClaim.add(outcome.id);
    }
    this.written(batch, released);
    for (const { report } of batch) {
      log('delivery %d (%s %s) attempt %d: %s', report.id, report.source, report.kind, report.result.attempt, report.result.status);
      this.tell(stale.has(report.id) ? { ...report, stale: true } : report);
    }
    this.loop.kick();
  }

  /**
   * Writes outcomes of batch deliveries (`BatchStore#recordBatches`), then tells each: the batch's
   * own report (its URL's answer, once), and one per call in it, with the batch's attempt: a call
   * the outcome ended as delivered or failed, any other as waiting (its batch retries, or another
   * URL's batch still holds it). Never rejects.
   */
  private async flushBatches(batch: readonly Written[]): Promise<void> {
    let stale: ReadonlySet<number> = new Set();
    let released: readonly string[] = [];
    const ended = new Map<number, 'delivered' | 'failed'>();
    try {
      const recorded = await this.store.batches.recordBatches(batch.map((b) => b.outcome));
      if (recorded.stale.length > 0) log('%d batch outcomes not written: finished already, or the lease went to another claim', recorded.stale.length);
      stale = new Set(recorded.stale);
      released = recorded.released;
      for (const m of recorded.members) ended.set(m.id, m.status);
    } catch (error) {
      // Left pending in the store: attempted again once the lease ends (at-least-once), never lost.
      log('could not record %d batch outcomes: %s', batch.length, (error as Error).message);
    }
    for (const { outcome } of batch) {
      this.unwritten.delete(outcome.id);
      if (this.watching) this.writtenDuringClaim.add(outcome.id);
    }
    this.written(batch, released);
    for (const { report } of batch) {
      const isStale = stale.has(report.id);
      this.tell(isStale ? { ...report, stale: true } : report);
      // Its calls as stored, for this first outcome only: a retry's later ones read them again.
      const known = this.batchCalls.get(report.id);
      this.batchCalls.delete(report.id);
      // Nothing sent (its URL disabled, the destination closing): not an attempt of its calls.
      if (isStale || report.result.outcomes.length === 0) continue;
      let members: readonly BatchMember[];
      if (known !== undefined && known.every((m) => ended.has(m.id))) {
        // The outcome ended every call of it (the common case): they are known here.
        members = known;
      } else {
        try {
          members = await this.store.batches.members(report.id);
        } catch (error) {
          log('could not read the calls of batch %d: %s', report.id, (error as Error).message);
          continue;
        }
      }
      for (const m of members) {
        const status = ended.get(m.id);
        // Ended before, by another URL's batch: its line is final already.
        if (status === undefined && !m.pending) continue;
        const result = memberResult(report.result, status, this.clock.now());
        this.tell({ id: m.id, source: m.source, kind: 'message', messageId: m.messageId, createdAt: m.createdAt, orderKey: m.orderKey, result, batch: report.id });
      }
    }
    // Slots freed, retries due, calls of a user let go: the loop looks now.
    this.loop.kick();
  }

  /**
   * A batch of outcomes was written: retries due before the store's last answer are claimed on
   * time, and an ordered delivery that finished with another of its user behind it lets that one
   * go (claimed now: a follower another instance stored is claimed here).
   */
  private written(batch: readonly Written[], released: readonly string[]): void {
    const now = this.clock.now();
    for (const { outcome, report } of batch) {
      if (outcome.status === 'retry') this.claiming.retryWritten(report.source, outcome.nextAttemptAt, now);
    }
    for (const source of released) this.claiming.notCaughtUp(source);
  }

  /**
   * The transforms that failed for a call sent in batches to its other URLs (final for theirs):
   * told as an attempt of the call that it goes on from (its batches decide how it ends).
   */
  tellTransformFailures(delivery: PendingDelivery, failed: readonly UrlOutcome[], now: number): void {
    const result: AttemptResult = { status: 'retry', attempt: delivery.attempts + 1, nextAttemptAt: now, outcomes: failed };
    this.tell(reportOf(delivery, result));
  }

  private tell(report: AttemptReport): void {
    try {
      this.told.step.recorded(report);
    } catch (error) {
      this.told.onError(error instanceof Error ? error : new Error(String(error)));
    }
  }
}

/**
 * A call's view of its batch's attempt: delivered or failed when the outcome ended the call;
 * otherwise a retry (due when its batch is, or now when another URL's batch still holds it).
 */
function memberResult(result: AttemptResult, ended: 'delivered' | 'failed' | undefined, now: number): AttemptResult {
  const { attempt, outcomes } = result;
  if (ended === 'delivered') return result.status === 'delivered' ? result : { status: 'delivered', url: outcomes.find((o) => o.error === undefined)?.url ?? '', attempt, outcomes };
  if (ended === 'failed') return result.status === 'failed' ? result : { status: 'failed', attempt, reason: 'Every batch holding the call failed', outcomes };
  return { status: 'retry', attempt, nextAttemptAt: result.status === 'retry' ? result.nextAttemptAt : now, outcomes };
}

export function outcomeOf(delivery: PendingDelivery, state: AttemptState, result: AttemptResult, now: number): DeliveryOutcome {
  switch (result.status) {
    case 'delivered':
      return { id: delivery.id, lease: delivery.lease, status: 'delivered', attempts: state.attempt, firstAttemptAt: state.firstAttemptAt, at: now, orderKey: delivery.orderKey };
    case 'failed':
      return {
        id: delivery.id,
        lease: delivery.lease,
        status: 'failed',
        attempts: state.attempt,
        firstAttemptAt: state.firstAttemptAt,
        at: now,
        reason: result.reason,
        orderKey: delivery.orderKey,
      };
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
