import type { PendingDelivery } from '../store/contract';

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
