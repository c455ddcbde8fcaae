import type { Pool } from 'pg';
import type { RateBudget, SlotGrant } from '../contract';
import { RATE } from './sql';

/**
 * The rate limits' budget shared by every instance on the database: a row per limited URL
 * (`rate_budgets`, keyed by a digest of the source and URL) holding its GCRA "theoretical arrival
 * time" on the database's clock. A claim is one statement: the row is locked, the slots from
 * max(tat, now) on are handed out (at most `count`, none more than `horizon` ms ahead) and tat moves
 * past them, so two instances never get the same slot and together keep the URL's spacing. The
 * answer is relative to the database's now, so instances' clocks need not agree.
 */
export class PostgresRateBudget implements RateBudget {
  constructor(private readonly pool: Pool) {}

  async claim(key: string, count: number, interval: number, horizon: number): Promise<SlotGrant> {
    const { rows } = await this.pool.query<{ delay: number; granted: number }>({
      name: 'eventrelay-rate-claim',
      text: RATE.claim,
      values: [key, Math.max(1, Math.floor(count)), interval, horizon],
    });
    const row = rows[0]!;
    return { delay: Number(row.delay), count: Number(row.granted) };
  }
}
