import type { ForwarderStore, LeaseRequest, PendingDelivery } from '../store/contract';

/**
 * How long the store's answer to "when is this source's next delivery due" is reused while
 * attempts are in flight, in ms: the bound on how late such a delivery can start then.
 */
export const NEXT_DUE_MAX_AGE = 1000;

/**
 * What this instance knows of each source's due deliveries in the store, and the claims that
 * take them. A claim takes at most the slots free now: what one instance cannot start soon stays
 * in the store, where every instance may claim it, so a backlog is shared by all of them.
 *
 * After a claim that found fewer than it asked for, the source is `caughtUp`: no claim is made
 * until the store's next due time (`nextDue`, asked at most once a second while attempts are in
 * flight) comes, new work is stored here, or `NEXT_DUE_MAX_AGE` passed (a delivery another
 * instance stored unleased, which no due time announces).
 */
export class Claiming {
  /**
   * Per source, the time its last claim looked for due deliveries: one that fell due after it
   * (while the store answered, on a slow machine) was not claimed, and must not be waited for.
   */
  private readonly claimedAt = new Map<string, number>();
  /** Per source, the store's last answer to `nextDueAfter` (`at`) and when it was asked (`fetchedAt`). */
  private readonly nextDue = new Map<string, { at: number | undefined; fetchedAt: number }>();
  /** Per source whose last claim found every due delivery (with nothing stored unleased since), when that was. */
  private readonly caughtUp = new Map<string, number>();
  /**
   * Counts the times `caughtUp` was unset (new work stored, given back or due): a claim that began
   * before the last of them may have missed that work, so it cannot set `caughtUp` itself.
   */
  private invalidations = 0;

  constructor(
    private readonly store: ForwarderStore,
    private readonly lease: LeaseRequest,
  ) {}

  /** New work of `source` (of every source without one) may be in the store: the next round claims. */
  notCaughtUp(source?: string): void {
    this.invalidations++;
    if (source === undefined) this.caughtUp.clear();
    else this.caughtUp.delete(source);
  }

  /**
   * Whether the store has nothing of `source` due at `now` that this instance has not claimed, as
   * far as it knows: then deliveries accepted now may go straight to this instance (hand-over)
   * without passing an older one.
   */
  caughtUpWith(source: string, now: number): boolean {
    return this.caughtUp.has(source) && !this.knownDue(source, now);
  }

  /** Whether the store may have deliveries of `source` due at `now` that no claim of this loop took. */
  mayHaveDue(source: string, now: number): boolean {
    const since = this.caughtUp.get(source);
    return since === undefined || now - since >= NEXT_DUE_MAX_AGE || this.knownDue(source, now);
  }

  /** Whether the store's last answer (or a retry written here) makes a delivery of `source` due by `now`. */
  private knownDue(source: string, now: number): boolean {
    const at = this.nextDue.get(source)?.at;
    return at !== undefined && at <= now;
  }

  /**
   * Claims up to `count` deliveries of `source` due at `now`, oldest due first. `more`: there may
   * be more due (it found as many as it asked for, or work was stored while it ran).
   */
  async claim(source: string, now: number, count: number): Promise<{ due: PendingDelivery[]; more: boolean }> {
    this.claimedAt.set(source, now);
    const invalidations = this.invalidations;
    const due = await this.store.claim(source, now, count, this.lease);
    if (due.length === count || this.invalidations !== invalidations) return { due, more: true };
    // Every delivery due by `now` is claimed: none to claim until the next due time.
    this.caughtUp.set(source, now);
    // The known due time was the earliest only: later retries written meanwhile were not kept
    // beside it. Consumed, it is asked of the store again, or the loop would sleep past them.
    const known = this.nextDue.get(source);
    if (known?.at !== undefined && known.at <= now) this.nextDue.delete(source);
    return { due, more: false };
  }

  /**
   * How long to sleep, at most `wait` ms, for `source`'s next due delivery: the store is asked
   * again once its answer is `NEXT_DUE_MAX_AGE` old while attempts are in flight (`busy`), or
   * `idleWait` old otherwise. Anything due by the source's last claim was claimed then; what fell
   * due after it was not.
   */
  async sleepFor(source: string, now: number, wait: number, busy: boolean, idleWait: number): Promise<number> {
    const claimed = this.claimedAt.get(source) ?? now;
    let known = this.nextDue.get(source);
    if (known === undefined || now - known.fetchedAt >= NEXT_DUE_MAX_AGE) {
      known = { at: await this.store.nextDueAfter(source, claimed), fetchedAt: now };
      this.nextDue.set(source, known);
    }
    if (known.at !== undefined && known.at > claimed) wait = Math.min(wait, Math.max(0, known.at - now));
    return Math.min(wait, known.fetchedAt + (busy ? NEXT_DUE_MAX_AGE : idleWait) - now);
  }

  /** A retry of `source` due at `at` was written here: it may come before the store's last answer (or that answer is past). */
  retryWritten(source: string, at: number, now: number): void {
    const known = this.nextDue.get(source);
    if (known === undefined) this.notCaughtUp(source);
    else if (known.at === undefined || known.at <= now || at < known.at) known.at = at;
  }
}
