import type { Clock } from 'eventrelay/internal';
import type { RateBudget, SlotGrant } from './contract';

/**
 * One GCRA step, pure: from the key's theoretical arrival time `tat` (undefined for a new key),
 * the slots to grant at `now` and the new `tat`.
 */
export function grantSlots(
  tat: number | undefined,
  now: number,
  count: number,
  interval: number,
  horizon: number,
): { first: number; count: number; tat: number } {
  const first = Math.max(tat ?? now, now);
  if (first > now + horizon || count < 1) return { first, count: 0, tat: tat ?? now };
  const granted = Math.min(Math.floor(count), Math.floor((now + horizon - first) / interval) + 1);
  return { first, count: granted, tat: first + granted * interval };
}

/** The budget of one forwarder process (memory and SQLite stores): a `tat` per key, on the forwarder's clock. */
export class MemoryRateBudget implements RateBudget {
  private readonly tats = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  async claim(key: string, count: number, interval: number, horizon: number): Promise<SlotGrant> {
    const now = this.clock.now();
    const grant = grantSlots(this.tats.get(key), now, count, interval, horizon);
    if (grant.count > 0) this.tats.set(key, grant.tat);
    return { delay: grant.first - now, count: grant.count };
  }
}
