import { describe, it } from 'mocha';
import { expect } from 'chai';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../../src/store/sqlite/sqlite';
import { accepted } from './contract';
import { MEMORY_LOG_LIMIT, MemoryDeliveryLog } from '../../../src/store/delivery-log';
import { SqliteDeliveryLog } from '../../../src/store/sqlite/sqlite-log';
import { attempt, call, deliveryLogContract, T0 } from './delivery-log-contract';

deliveryLogContract('MemoryDeliveryLog', (keepDelivered) => new MemoryDeliveryLog({ keepDelivered }));
deliveryLogContract('SqliteDeliveryLog', (keepDelivered) => new SqliteDeliveryLog(new Database(':memory:'), { keepDelivered }));

describe('MemoryDeliveryLog limit', () => {
  it('keeps the newest 100 000 calls by default', () => {
    expect(MEMORY_LOG_LIMIT).to.equal(100_000);
  });

  it('keeps the newest calls when it holds more than its limit', async () => {
    const log = new MemoryDeliveryLog({ keepDelivered: 0 }, 10);
    log.add(Array.from({ length: 25 }, (_, i) => call(`n${i}`)));
    const rows = await log.list({ limit: 100 });
    expect(rows.length).to.be.at.most(11).and.at.least(10);
    expect(rows[0]!.messageId).to.equal('n24');
    // A dropped call's late attempt is ignored, not an error.
    log.attempt(attempt('n0', 1, 'delivered', T0 + 1));
  });
});

/** Records the PRAGMA statements run through `db.pragma`; `pragma` runs one unrecorded. */
function spyOnPragmas(db: Database.Database): { pragmas: string[]; pragma: Database.Database['pragma'] } {
  const pragmas: string[] = [];
  const pragma = db.pragma.bind(db);
  db.pragma = ((source: string, options?: { simple?: boolean }) => {
    pragmas.push(source);
    return pragma(source, options);
  }) as typeof db.pragma;
  return { pragmas, pragma };
}

describe('SqliteDeliveryLog durability', () => {
  it('commits with synchronous=NORMAL (no fsync of its own) and gives the queue its setting back', async () => {
    const db = new Database(':memory:');
    db.pragma('synchronous = FULL');
    const log = new SqliteDeliveryLog(db, { keepDelivered: 0 });
    const { pragmas, pragma } = spyOnPragmas(db);
    log.add([call('s1')]);
    expect((await log.list({ limit: 1 }))[0]!.messageId).to.equal('s1');
    expect(pragmas).to.deep.equal(['synchronous', 'synchronous = NORMAL', 'synchronous = 2']);
    expect(pragma('synchronous', { simple: true })).to.equal(2);
    await log.close();
  });
});

describe('SqliteDeliveryLog in the SqliteStore\'s database', () => {
  it('commits without an fsync through the store\'s own setting: no pragma per flush, and the next accept is durable again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'eventrelay-log-sync-'));
    const store = new SqliteStore({ dataDir: dir });
    try {
      const db = store.database;
      const log = store.openLog({ keepDelivered: 0 }) as SqliteDeliveryLog;
      const { pragmas, pragma } = spyOnPragmas(db);
      await store.accept([accepted('a')]);
      expect(pragma('synchronous', { simple: true })).to.equal(2);
      for (const id of ['l1', 'l2']) {
        log.add([call(id)]);
        log.flush();
        // The log's commit ran with synchronous=NORMAL, set once through the store.
        expect(pragma('synchronous', { simple: true })).to.equal(1);
      }
      expect((await log.list({ limit: 2 })).map((l) => l.messageId)).to.deep.equal(['l2', 'l1']);
      expect(pragmas).to.deep.equal([]);
      // The store knows the log left NORMAL behind: its next accept sets FULL again.
      await store.accept([accepted('b')]);
      expect(pragma('synchronous', { simple: true })).to.equal(2);
      await log.close();
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SqliteDeliveryLog made by an earlier release', () => {
  it('drops the event name\'s index, and still finds calls by event, newest first', async () => {
    const db = new Database(':memory:');
    new SqliteDeliveryLog(db, { keepDelivered: 0 }).close();
    db.exec('CREATE INDEX log_messages_event ON log_messages (event) WHERE event IS NOT NULL');
    const log = new SqliteDeliveryLog(db, { keepDelivered: 0 });
    const indexes = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'log_messages'").pluck().all();
    expect(indexes).to.include('log_messages_key');
    expect(indexes).to.not.include('log_messages_event');
    log.add([call('e1', { event: 'Signed Up' }), call('e2', { event: 'Other' }), call('e3', { event: 'Signed Up' })]);
    expect((await log.list({ event: 'Signed Up', limit: 10 })).map((m) => m.messageId)).to.deep.equal(['e3', 'e1']);
    await log.close();
  });
});
