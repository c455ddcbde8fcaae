import { describe, it, afterEach } from 'mocha';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteDeliveryLog } from '../../../src/store/sqlite/sqlite-log';
import { attempt, call, T0 } from './delivery-log-contract';

describe('SqliteDeliveryLog: attempts made before the flush that writes their call', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** A log on a database whose statements count their runs by the first words of their SQL. */
  function open(keepDelivered = 0): { db: Database.Database; log: SqliteDeliveryLog; runs: Map<string, number> } {
    const dir = mkdtempSync(join(tmpdir(), 'eventrelay-log-'));
    dirs.push(dir);
    const db = new Database(join(dir, 'log.db'));
    db.pragma('journal_mode = WAL');
    const runs = new Map<string, number>();
    const prepare = db.prepare.bind(db);
    db.prepare = ((sql: string) => {
      const statement = prepare(sql);
      const kind = sql.trim().split(/\s+/).slice(0, 3).join(' ');
      const run = statement.run.bind(statement);
      statement.run = ((...args: unknown[]) => {
        runs.set(kind, (runs.get(kind) ?? 0) + 1);
        return run(...args);
      }) as typeof statement.run;
      return statement;
    }) as typeof db.prepare;
    return { db, log: new SqliteDeliveryLog(db, { keepDelivered }), runs };
  }

  it('writes a call attempted within the flush once, in its state after the attempt: no update, no delivered body', async () => {
    const { db, log, runs } = open();
    log.add([call('a'), call('b')]);
    log.attempt(attempt('a', 1, 'delivered', T0 + 5));
    log.attempt(attempt('b', 1, 'retry', T0 + 5));
    log.flush();
    expect(runs.get('UPDATE log_messages SET') ?? 0).to.equal(0);
    expect(runs.get('INSERT INTO log_messages')).to.equal(2);
    const rows = db.prepare('SELECT message_id, state, attempts, finished_at, body IS NULL AS erased FROM log_messages ORDER BY id').all();
    expect(rows).to.deep.equal([
      { message_id: 'a', state: 'delivered', attempts: 1, finished_at: T0 + 5, erased: 1 },
      { message_id: 'b', state: 'retrying', attempts: 1, finished_at: null, erased: 0 },
    ]);
    // The retried one takes later attempts like any line; both have their attempt rows.
    log.attempt(attempt('b', 2, 'delivered', T0 + 900));
    const detail = await log.get((await log.list({ messageId: 'b', limit: 1 }))[0]!.id);
    expect(detail).to.deep.include({ state: 'delivered', attempts: 2 });
    expect(detail!.attemptLog.map((a) => [a.series, a.attempt, a.outcome])).to.deep.equal([
      [1, 1, 'retry'],
      [1, 2, 'delivered'],
    ]);
    const a = await log.get((await log.list({ messageId: 'a', limit: 1 }))[0]!.id);
    expect(a!.attemptLog.map((x) => [x.series, x.attempt, x.outcome, x.status])).to.deep.equal([[1, 1, 'delivered', 200]]);
    await log.close();
    db.close();
  });

  it('keeps the body of a call delivered within the flush when delivered bodies are kept', async () => {
    const { db, log } = open(60_000);
    log.add([call('k')]);
    log.attempt(attempt('k', 1, 'delivered', T0 + 5));
    const [line] = await log.list({ limit: 1 });
    expect(line).to.deep.include({ state: 'delivered', hasBody: true, attempts: 1 });
    await log.close();
    db.close();
  });
});
