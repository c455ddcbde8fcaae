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

describe('SqliteDeliveryLog: attempts kept in their line', () => {
  /** The log's tables as the release before attempt_log made them. */
  const BEFORE = `
    CREATE TABLE log_messages (id INTEGER PRIMARY KEY, source TEXT NOT NULL, kind TEXT NOT NULL, message_id TEXT NOT NULL, type TEXT, user_id TEXT,
      received_at INTEGER NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, series INTEGER NOT NULL DEFAULT 1, updated_at INTEGER NOT NULL,
      finished_at INTEGER, reason TEXT, body TEXT);
    CREATE TABLE log_attempts (id INTEGER PRIMARY KEY, delivery_id INTEGER NOT NULL, series INTEGER NOT NULL, attempt INTEGER NOT NULL, at INTEGER NOT NULL,
      url TEXT NOT NULL, status INTEGER, error TEXT, duration_ms INTEGER NOT NULL, outcome TEXT NOT NULL, next_attempt_at INTEGER);`;

  it('writes no attempt row: a retried and delivered line shows both attempts from the line itself', async () => {
    const db = new Database(':memory:');
    const log = new SqliteDeliveryLog(db, { keepDelivered: 0 });
    log.add([call('own')]);
    await log.list({ limit: 1 });
    log.attempt(attempt('own', 1, 'retry', T0 + 5));
    log.attempt(attempt('own', 2, 'delivered', T0 + 50));
    const detail = (await log.get((await log.list({ limit: 1 }))[0]!.id))!;
    expect(detail.attemptLog.map((a) => [a.series, a.attempt, a.status, a.outcome])).to.deep.equal([
      [1, 1, 503, 'retry'],
      [1, 2, 200, 'delivered'],
    ]);
    expect(db.prepare('SELECT count(*) AS n FROM log_attempts').get()).to.deep.equal({ n: 0 });
    await log.close();
  });

  it("shows a line's attempts written by the earlier release with those it keeps now, in order, and prunes both", async () => {
    const db = new Database(':memory:');
    db.exec(BEFORE);
    const { lastInsertRowid } = db
      .prepare(
        `INSERT INTO log_messages (source, kind, message_id, type, user_id, received_at, state, attempts, updated_at, reason, body)
         VALUES ('web', 'message', 'old', 'track', 'u1', ?, 'retrying', 1, ?, 'HTTP 503 from http://hooks.test/in', '{}')`,
      )
      .run(T0, T0 + 10);
    const id = Number(lastInsertRowid);
    db.prepare(
      `INSERT INTO log_attempts (delivery_id, series, attempt, at, url, status, error, duration_ms, outcome, next_attempt_at)
       VALUES (?, 1, 1, ?, 'http://hooks.test/in', 503, 'HTTP', 12, 'retry', ?)`,
    ).run(id, T0 + 10, T0 + 400);
    const log = new SqliteDeliveryLog(db, { keepDelivered: 0 });
    log.attempt(attempt('old', 2, 'delivered', T0 + 400));
    const detail = (await log.get(id))!;
    expect(detail).to.include({ state: 'delivered', attempts: 2, body: null });
    expect(detail.attemptLog.map((a) => [a.series, a.attempt, a.at, a.status, a.outcome, a.nextAttemptAt])).to.deep.equal([
      [1, 1, T0 + 10, 503, 'retry', T0 + 400],
      [1, 2, T0 + 400, 200, 'delivered', null],
    ]);
    expect(await log.prune(T0 + 401, T0 + 401)).to.equal(2);
    expect(await log.get(id)).to.equal(undefined);
    expect(db.prepare('SELECT count(*) AS n FROM log_attempts').get()).to.deep.equal({ n: 0 });
    await log.close();
  });
});
