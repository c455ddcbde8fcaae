import { checkout, numberArray, pgText, textArray } from './pg-driver';
import type { Pool } from 'pg';
import { capEvents, mergeDay } from '../usage';
import { toSchemaCount, toUsageDay } from '../sql-rows';
import type { DayRow, EventRow } from '../sql-rows';
import type { SchemaCount, UsageBatch, UsageDay, UsageStore } from '../contract';
import { ADD_DAYS, ADD_EVENTS, USAGE } from './sql';

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * What each source sends and its usage per day on PostgreSQL, added to by every instance: one
 * picture of them all. Each background write is one transaction of upserts, its rows in key order
 * so that instances writing the same rows at once take their locks in one order.
 */
export class PostgresUsageStore implements UsageStore {
  constructor(
    private readonly pool: Pool,
    private readonly guard: () => void,
  ) {}

  async add(batch: UsageBatch): Promise<void> {
    if (batch.events.length === 0 && batch.days.length === 0) return;
    this.guard();
    // Compared with what is stored, so in the form it is stored in.
    const events = batch.events.map((c) => ({ ...c, event: pgText(c.event), source: pgText(c.source) }));
    const days = new Map<string, UsageDay>();
    for (const d of batch.days) {
      const k = `${d.sourceId}\u0000${d.day}`;
      const before = days.get(k);
      days.set(k, before === undefined ? d : mergeDay(before, d));
    }
    const client = await checkout(this.pool);
    try {
      await client.query('BEGIN');
      try {
        const named = events.filter((c) => c.type === 'track' && c.event !== '');
        const ids = [...new Set(named.map((c) => c.sourceId))];
        const known = new Set<string>();
        const kept = new Map<string, number>();
        if (named.length > 0) {
          const found = await client.query<{ source_id: string; event: string }>(
            USAGE.trackedNames,
            [textArray(named.map((c) => c.sourceId)), textArray(named.map((c) => c.event))],
          );
          for (const r of found.rows) known.add(`${r.source_id}\u0000${r.event}`);
          const counted = await client.query<{ source_id: string; n: number }>(
            USAGE.namesKept,
            [textArray(ids)],
          );
          for (const r of counted.rows) kept.set(r.source_id, r.n);
        }
        const rows = capEvents(
          events,
          (c) => known.has(`${c.sourceId}\u0000${c.event}`),
          (sourceId) => kept.get(sourceId) ?? 0,
        ).sort((a, b) => compare(a.sourceId, b.sourceId) || compare(a.type, b.type) || compare(a.event, b.event));
        if (rows.length > 0) {
          await client.query(ADD_EVENTS, [
            textArray(rows.map((c) => c.sourceId)),
            textArray(rows.map((c) => c.type)),
            textArray(rows.map((c) => c.event)),
            textArray(rows.map((c) => c.source)),
            numberArray(rows.map((c) => c.count)),
            numberArray(rows.map((c) => c.firstSeen)),
            numberArray(rows.map((c) => c.lastSeen)),
          ]);
        }
        const list = [...days.values()].sort((a, b) => compare(a.sourceId, b.sourceId) || a.day - b.day);
        if (list.length > 0) {
          await client.query(ADD_DAYS, [
            textArray(list.map((d) => d.sourceId)),
            numberArray(list.map((d) => d.day)),
            textArray(list.map((d) => pgText(d.source))),
            numberArray(list.map((d) => d.received)),
            numberArray(list.map((d) => d.filtered)),
            numberArray(list.map((d) => d.rejected)),
            numberArray(list.map((d) => d.delivered)),
            numberArray(list.map((d) => d.failed)),
          ]);
        }
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    } finally {
      client.release();
    }
  }

  async events(sourceId: string): Promise<SchemaCount[]> {
    this.guard();
    const { rows } = await this.pool.query<EventRow>(
      USAGE.events,
      [sourceId],
    );
    return rows.map(toSchemaCount);
  }

  async days(sourceIds: readonly string[], fromDay: number, toDay: number): Promise<UsageDay[]> {
    this.guard();
    if (sourceIds.length === 0) return [];
    const { rows } = await this.pool.query<DayRow>(
      USAGE.days,
      [textArray(sourceIds), fromDay, toDay],
    );
    return rows.map(toUsageDay);
  }

  async prune(beforeDay: number): Promise<number> {
    this.guard();
    const events = await this.pool.query(USAGE.pruneEvents);
    const days = await this.pool.query(USAGE.pruneDays, [beforeDay]);
    return (events.rowCount ?? 0) + (days.rowCount ?? 0);
  }
}
