import type BetterSqlite3 from 'better-sqlite3';
import { capEvents } from '../usage';
import { toSchemaCount, toUsageDay } from '../sql-rows';
import type { DayRow, EventRow } from '../sql-rows';
import { USAGE } from './sql';
import type { SchemaCount, UsageBatch, UsageDay, UsageStore } from '../contract';

/**
 * What each source sends and its usage per day, in the SQLite database (tables `source_events`
 * and `source_usage`): each background write of the counts is one transaction of upserts.
 */
export class SqliteUsageStore implements UsageStore {
  private readonly statements;
  private readonly addTx: BetterSqlite3.Transaction<(batch: UsageBatch) => void>;

  constructor(
    db: BetterSqlite3.Database,
    /** Throws when the store is closed; sets the durability of the write that follows. */
    private readonly guard: () => void,
  ) {
    this.statements = {
      known: db.prepare(USAGE.known).pluck(),
      kept: db.prepare(USAGE.kept).pluck(),
      addEvent: db.prepare(USAGE.addEvent),
      addDay: db.prepare(USAGE.addDay),
      events: db.prepare(USAGE.events),
      days: db.prepare(USAGE.days),
      pruneEvents: db.prepare(USAGE.pruneEvents),
      pruneDays: db.prepare(USAGE.pruneDays),
    };
    const s = this.statements;
    this.addTx = db.transaction((batch: UsageBatch) => {
      const kept = new Map<string, number>();
      const rows = capEvents(
        batch.events,
        (c) => s.known.get(c.sourceId, c.type, c.event) !== undefined,
        (sourceId) => {
          let n = kept.get(sourceId);
          if (n === undefined) kept.set(sourceId, (n = s.kept.get(sourceId) as number));
          return n;
        },
      );
      for (const c of rows) s.addEvent.run(c.sourceId, c.type, c.event, c.source, c.count, c.firstSeen, c.lastSeen);
      for (const d of batch.days) s.addDay.run(d.sourceId, d.day, d.source, d.received, d.filtered, d.rejected, d.delivered, d.failed);
    });
  }

  async add(batch: UsageBatch): Promise<void> {
    if (batch.events.length === 0 && batch.days.length === 0) return;
    this.guard();
    this.addTx.immediate(batch);
  }

  async events(sourceId: string): Promise<SchemaCount[]> {
    this.guard();
    return (this.statements.events.all(sourceId) as EventRow[]).map(toSchemaCount);
  }

  async days(sourceIds: readonly string[], fromDay: number, toDay: number): Promise<UsageDay[]> {
    this.guard();
    return sourceIds.flatMap((id) => (this.statements.days.all(id, fromDay, toDay) as DayRow[]).map(toUsageDay));
  }

  async prune(beforeDay: number): Promise<number> {
    this.guard();
    return this.statements.pruneEvents.run().changes + this.statements.pruneDays.run(beforeDay).changes;
  }
}
