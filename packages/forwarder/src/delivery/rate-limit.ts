import { createHash } from 'node:crypto';
import createDebug from 'debug';
import { ConfigError, describeValue, objectOption } from 'eventrelay/internal';
import type { Clock } from 'eventrelay/internal';
import type { RateBudget, RateLimit } from '../store/contract';

const log = createDebug('eventrelay:delivery');

/**
 * Per-URL rate limits. Each limited URL has a budget of send slots spaced `1000 / perSecond` ms
 * apart (GCRA: the budget's "theoretical arrival time" moves on by one interval per slot handed
 * out, and never lags behind now, so an idle URL saves up nothing). Slots come in small batches,
 * at most `SLOT_HORIZON` ms ahead, from a `RateBudget`: process memory for one forwarder, a row
 * per URL in PostgreSQL for several, so that the instances together keep to the one spacing.
 *
 * A request goes out at or after its slot, and at most `SLOT_LATENESS` ms after it; a slot that
 * has grown older is dropped, unused. So in any time span of T ms, at most
 * (T + SLOT_LATENESS) / interval + 1 requests start: in any second, perSecond × 1.05 + 1.
 */

/** How far ahead of now slots are claimed, in ms: a batch covers at most this much time. */
export const SLOT_HORIZON = 250;

/** How long after its time a slot may still be used, in ms; later it is dropped unused. */
export const SLOT_LATENESS = 50;

/** The most requests a second a limit may allow. */
export const MAX_PER_SECOND = 100_000;

/**
 * The fewest: one request every 100 s. Below it a limit is a mistake, not a pace (`1e-9` is one
 * request in 31 years), and each held message would wait past its retry window for its turn.
 */
export const MIN_PER_SECOND = 0.01;

/** Checks a `rateLimit` object; `field` is its path (`webhooks[0].rateLimit`). */
export function rateLimitOption(field: string, value: unknown): RateLimit {
  const raw = objectOption(field, value, 'an object { "perSecond": number }');
  for (const key of Object.keys(raw)) {
    if (key !== 'perSecond') throw new ConfigError(`Unknown field \`${field}.${key}\`; expected \`perSecond\``, `${field}.${key}`);
  }
  const perSecond = raw.perSecond;
  if (typeof perSecond !== 'number' || !Number.isFinite(perSecond) || perSecond < MIN_PER_SECOND || perSecond > MAX_PER_SECOND) {
    throw new ConfigError(
      `Expected \`${field}.perSecond\` to be a number of requests a second, from ${MIN_PER_SECOND} (one every 100 s) to ${MAX_PER_SECOND}, got ${describeValue(perSecond)}`,
      `${field}.perSecond`,
    );
  }
  return { perSecond };
}

/** The budget key of a URL: a digest, so that no URL (which may hold a token) is stored as a key. */
export function rateKey(scope: string, url: string): string {
  return createHash('sha256').update(`${scope}\n${url}`).digest('base64url');
}

/** The local slots of one limited URL. */
class UrlSlots {
  /** Unassigned slot times on the forwarder's clock, ascending. */
  slots: number[] = [];
  /** The budget had nothing within the horizon: not worth asking before this time. */
  blockedUntil = 0;
  fetching: Promise<void> | undefined;

  constructor(
    readonly index: number,
    readonly key: string,
    /** Ms between two slots. */
    readonly interval: number,
  ) {}

  /** Drops slots too old to use. */
  expire(now: number): void {
    let drop = 0;
    while (drop < this.slots.length && this.slots[drop]! < now - SLOT_LATENESS) drop++;
    if (drop > 0) this.slots.splice(0, drop);
  }
}

/** Slots taken for one request: it may start at `at`, and must start by `deadline`. */
export interface Reservation {
  readonly at: number;
  readonly deadline: number;
}

/** What `RateGate#room` answers. */
export interface Room {
  /** Attempts that may be claimed now (Infinity: no limit applies). */
  readonly count: number;
  /** With `count` 0: when to look again, if known (else a fetch in flight will wake the caller). */
  readonly readyAt?: number;
}

/**
 * The rate limits of one destination's URLs. `room` says how many attempts to start (sync, from
 * the slots at hand); `take` assigns one slot of every limited URL to an attempt, fetching a batch
 * from the budget when there is none. URLs in `skip` (disabled) take no slot.
 */
export class RateGate {
  private readonly urls: UrlSlots[];
  /** How many slots the caller would use now: the size of the next batch asked for. */
  private wanted = 1;

  constructor(
    limits: readonly { readonly index: number; readonly url: string; readonly perSecond: number }[],
    private readonly budget: () => RateBudget,
    private readonly clock: Clock,
    scope: string,
    /** Called once a batch arrived (on a later turn), so that a scheduler may claim for it. */
    private readonly onSlots: () => void = () => {},
  ) {
    this.urls = limits.map((l) => new UrlSlots(l.index, rateKey(scope, l.url), 1000 / l.perSecond));
  }

  private limited(skip: readonly number[] | undefined): UrlSlots[] {
    return skip === undefined || skip.length === 0 ? this.urls : this.urls.filter((u) => !skip.includes(u.index));
  }

  room(now: number, wanted: number, skip?: readonly number[]): Room {
    this.wanted = Math.max(1, wanted);
    let count = Infinity;
    let readyAt: number | undefined;
    for (const u of this.limited(skip)) {
      u.expire(now);
      if (u.slots.length > 0) count = Math.min(count, u.slots.length);
      else if (u.fetching !== undefined) count = 0;
      else if (u.blockedUntil > now) {
        count = 0;
        readyAt = Math.max(readyAt ?? 0, u.blockedUntil);
      } else count = Math.min(count, 1); // one attempt, which fetches a batch
    }
    return readyAt === undefined ? { count: Math.min(count, wanted) } : { count: 0, readyAt };
  }

  /** A slot of every limited URL at once, when each has one at hand; else undefined. */
  tryTake(now: number, skip?: readonly number[]): Reservation | undefined {
    const urls = this.limited(skip);
    if (urls.length === 0) return { at: now, deadline: Infinity };
    let at = -Infinity;
    for (const u of urls) {
      u.expire(now);
      if (u.slots.length === 0) return undefined;
      at = Math.max(at, u.slots[0]!);
    }
    // Slots used together start within SLOT_LATENESS of the latest one: older ones are dropped.
    for (const u of urls) {
      u.expire(at);
      if (u.slots.length === 0) return undefined;
    }
    let earliest = Infinity;
    for (const u of urls) earliest = Math.min(earliest, u.slots.shift()!);
    return { at, deadline: earliest + SLOT_LATENESS };
  }

  /**
   * A reservation, fetching slots as needed; or, when the budget has none within the horizon,
   * the time to try again (`blockedUntil`).
   */
  async take(skip?: readonly number[]): Promise<Reservation | { readonly blockedUntil: number }> {
    for (let round = 0; round < 3; round++) {
      const now = this.clock.now();
      const taken = this.tryTake(now, skip);
      if (taken !== undefined) return taken;
      const missing = this.limited(skip).filter((u) => u.slots.length === 0);
      const blocked = missing.filter((u) => u.fetching === undefined && u.blockedUntil > now);
      if (blocked.length > 0) return { blockedUntil: Math.max(...blocked.map((u) => u.blockedUntil)) };
      await Promise.all(missing.map((u) => this.fetch(u)));
    }
    // Others took the slots as fast as they came: come back a slot later.
    const now = this.clock.now();
    return { blockedUntil: now + Math.max(...this.limited(skip).map((u) => u.interval)) };
  }

  private fetch(u: UrlSlots): Promise<void> {
    u.fetching ??= (async () => {
      try {
        const grant = await this.budget().claim(u.key, this.wanted, u.interval, SLOT_HORIZON);
        const now = this.clock.now();
        if (grant.count > 0) {
          const first = now + grant.delay;
          for (let i = 0; i < grant.count; i++) u.slots.push(first + i * u.interval);
          u.blockedUntil = 0;
        } else {
          u.blockedUntil = now + Math.max(1, grant.delay - SLOT_HORIZON);
        }
      } catch (error) {
        // The budget is out of reach (the database): send nothing to this URL for a second.
        log('rate limit: could not claim slots: %s', (error as Error).message);
        u.blockedUntil = this.clock.now() + 1000;
      } finally {
        u.fetching = undefined;
        // On a later turn: the attempt that fetched takes its slot first.
        setImmediate(this.onSlots);
      }
    })();
    return u.fetching;
  }
}
