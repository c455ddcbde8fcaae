import type { AcceptLease, PendingDelivery } from '../store/contract';

/**
 * Most body characters of handed-over deliveries held at once; past it, accepted deliveries are
 * stored unleased and claimed. A bound on memory, above what the bound on count allows with
 * bodies of usual size.
 */
const HOLD_CHARS = 16 * 1024 * 1024;

/** A first-in first-out queue: `shift` in constant time, however long (an array's shift copies a large array). */
export class Fifo<T> {
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

/** What `take` found: deliveries to start now, and those that waited too long, to give back. */
export interface Taken {
  readonly start: PendingDelivery[];
  readonly late: PendingDelivery[];
}

/**
 * Deliveries leased to this instance by the commit that accepted them (`AcceptLease`), held in
 * memory per source, oldest first, until a slot frees: attempted without a claim (no claim
 * statement, no row read back). Each must start within `holdMs` of its receipt, so that an
 * attempt started in time ends within the lease.
 *
 * The instance takes only what it can start soon: at most `limit()` deliveries held and in flight
 * together (what it started in the last second, and never less than its slots plus as many). An instance that holds more leaves a backlog
 * no other instance may touch until the leases run out; what it cannot start soon is stored
 * unleased instead, or given back at once when one commit brought more than the room, for every
 * instance to claim.
 */
export class HandOver {
  private readonly held = new Map<string, Fifo<{ delivery: PendingDelivery; until: number }>>();
  /** Held deliveries, over all sources. */
  private count = 0;
  /** Body characters of the held deliveries. */
  private chars = 0;

  constructor(
    private readonly holdMs: number,
    /** Most deliveries held and in flight at once, now. */
    private readonly limit: () => number,
  ) {}

  get enabled(): boolean {
    return this.holdMs > 0;
  }

  /** Whether `source` has deliveries waiting here for a slot. */
  has(source: string): boolean {
    return this.held.has(source);
  }

  /** How many more deliveries may be handed over with `inFlight` attempts in flight. */
  room(inFlight: number): number {
    if (this.holdMs <= 0 || this.chars >= HOLD_CHARS) return 0;
    return this.limit() - inFlight - this.count;
  }

  /**
   * Holds what fits of `deliveries` (leased under `lease`) and returns the rest, to give back
   * to the store.
   */
  adopt(deliveries: readonly PendingDelivery[], lease: AcceptLease, inFlight: number): PendingDelivery[] {
    const until = lease.now + this.holdMs;
    const room = this.room(inFlight);
    const rest: PendingDelivery[] = [];
    for (let i = 0; i < deliveries.length; i++) {
      const delivery = deliveries[i]!;
      if (i >= room) {
        rest.push(delivery);
        continue;
      }
      let queue = this.held.get(delivery.source);
      if (queue === undefined) this.held.set(delivery.source, (queue = new Fifo()));
      queue.push({ delivery, until });
      this.count++;
      this.chars += delivery.body.length;
    }
    return rest;
  }

  /** Up to `count` held deliveries of `source` to start now, oldest first, past those that waited too long. */
  take(source: string, count: number, now: number): Taken {
    const queue = this.held.get(source);
    const start: PendingDelivery[] = [];
    const late: PendingDelivery[] = [];
    if (queue === undefined) return { start, late };
    while (start.length < count) {
      const next = queue.shift();
      if (next === undefined) break;
      this.count--;
      this.chars -= next.delivery.body.length;
      if (now > next.until) late.push(next.delivery);
      else start.push(next.delivery);
    }
    if (queue.length === 0) this.held.delete(source);
    return { start, late };
  }

  /** The held deliveries of `source`, no longer held (the source was deleted). */
  drop(source: string): PendingDelivery[] {
    const queue = this.held.get(source);
    if (queue === undefined) return [];
    this.held.delete(source);
    const dropped = queue.drain().map((h) => h.delivery);
    for (const d of dropped) {
      this.count--;
      this.chars -= d.body.length;
    }
    return dropped;
  }

  /** Every held delivery, no longer held (the loop stops). */
  drain(): PendingDelivery[] {
    const all = [...this.held.values()].flatMap((queue) => queue.drain().map((h) => h.delivery));
    this.held.clear();
    this.count = 0;
    this.chars = 0;
    return all;
  }
}
