import type { Pool } from 'pg';
import type { RateBudget, SlotGrant } from '../contract';

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
      text: `WITH now AS (SELECT extract(epoch FROM clock_timestamp())::float8 * 1000 AS t)
       INSERT INTO rate_budgets AS r (key, tat, asked_at, first_slot, granted)
       SELECT $1, t + g * $3::float8, t, t, g FROM now, LATERAL (SELECT least($2::int, floor($4::float8 / $3::float8)::int + 1) AS g) x
       ON CONFLICT (key) DO UPDATE SET
         asked_at = EXCLUDED.asked_at,
         first_slot = greatest(r.tat, EXCLUDED.asked_at),
         granted = CASE WHEN greatest(r.tat, EXCLUDED.asked_at) > EXCLUDED.asked_at + $4::float8 THEN 0
           ELSE least($2::int, floor((EXCLUDED.asked_at + $4::float8 - greatest(r.tat, EXCLUDED.asked_at)) / $3::float8)::int + 1) END,
         tat = greatest(r.tat, EXCLUDED.asked_at) + $3::float8 * CASE WHEN greatest(r.tat, EXCLUDED.asked_at) > EXCLUDED.asked_at + $4::float8 THEN 0
           ELSE least($2::int, floor((EXCLUDED.asked_at + $4::float8 - greatest(r.tat, EXCLUDED.asked_at)) / $3::float8)::int + 1) END
       RETURNING first_slot - asked_at AS delay, granted`,
      values: [key, Math.max(1, Math.floor(count)), interval, horizon],
    });
    const row = rows[0]!;
    return { delay: Number(row.delay), count: Number(row.granted) };
  }
}
