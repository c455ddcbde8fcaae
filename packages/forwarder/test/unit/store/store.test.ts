import { describe, it, after, afterEach } from 'mocha';
import { orderingContract } from './ordering-contract';
import { batchContract } from './batch-contract';
import { expect } from 'chai';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { MemoryStore } from '../../../src/store/memory/memory';
import { SqliteStore } from '../../../src/store/sqlite/sqlite';
import { SQLITE_MIGRATIONS, sqliteSchemaVersion } from '../../../src/store/sqlite/sqlite-schema';
import { StoreError } from '../../../../eventrelay/src/errors';
import { accepted, delivery, storeContract, T0 } from './contract';
import { setupContract } from './setup-contract';
import { usageContract } from './usage-contract';

const LEASE = { owner: 'test', ms: 30_000 };
const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'eventrelay-store-'));
  dirs.push(dir);
  return dir;
}

storeContract('MemoryStore', async () => new MemoryStore());
orderingContract('MemoryStore', async () => new MemoryStore());
orderingContract('SqliteStore', async () => new SqliteStore({ dataDir: tempDir() }));
batchContract('MemoryStore', async () => new MemoryStore());
batchContract('SqliteStore', async () => new SqliteStore({ dataDir: tempDir() }));
storeContract('SqliteStore', async () => new SqliteStore({ dataDir: tempDir() }));
setupContract('MemoryStore', async () => new MemoryStore());
setupContract('SqliteStore', async () => new SqliteStore({ dataDir: tempDir() }));
usageContract('MemoryStore', async () => new MemoryStore());
usageContract('SqliteStore', async () => new SqliteStore({ dataDir: tempDir() }));

/** The indexes of the delivery log's lines table, by name. */
const logIndexes = (db: Database.Database): string[] =>
  db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'log_messages' ORDER BY name").pluck().all() as string[];

describe('SqliteStore on disk', () => {
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('finds pending deliveries, counters and audiences again after a reopen', async () => {
    const dataDir = tempDir();
    const first = new SqliteStore({ dataDir });
    await first.accept([accepted('a'), accepted('b')]);
    const [a] = await first.claim('web', T0, 1, LEASE);
    await first.record([{ id: a!.id, lease: a!.lease, status: 'retry', attempts: 1, firstAttemptAt: T0, nextAttemptAt: T0 + 100 }]);
    await first.syncAudience('web', 'vip', ['u1'], () => []);
    await first.close();

    const second = new SqliteStore({ dataDir });
    try {
      const due = await second.claim('web', T0 + 100, 10, LEASE);
      expect(due.map((d) => [d.messageId, d.attempts])).to.deep.equal([['b', 0], ['a', 1]]);
      expect(await second.counts()).to.deep.include({ accepted: 2, pending: 2, retrying: 1 });
      expect(await second.syncAudience('web', 'vip', ['u1', 'u2'], () => [])).to.deep.equal({ firstSync: false, added: ['u2'], removed: [] });
      expect(await second.accept([accepted('a')])).to.deep.equal({ stored: 0, duplicates: 1, repeated: [true], leased: undefined });
    } finally {
      await second.close();
    }
  });

  it('releases at open the leases of a forwarder that was killed (it was the only one)', async () => {
    const dataDir = tempDir();
    const first = new SqliteStore({ dataDir });
    await first.enqueue([delivery('a')]);
    expect(await first.claim('web', T0, 1, LEASE)).to.have.length(1);
    // Closed without an outcome, as a SIGKILL would leave it.
    await first.close();
    const second = new SqliteStore({ dataDir });
    try {
      const [again] = await second.claim('web', Date.now(), 1, LEASE);
      expect(again).to.include({ messageId: 'a', attempts: 0 });
    } finally {
      await second.close();
    }
  });

  it('drops the body of a delivered message at once and keeps a failed one', async () => {
    const dataDir = tempDir();
    const store = new SqliteStore({ dataDir });
    await store.enqueue([delivery('ok'), delivery('bad')]);
    const [ok, bad] = await store.claim('web', T0, 10, LEASE);
    await store.record([
      { id: ok!.id, lease: ok!.lease, status: 'delivered', attempts: 1, firstAttemptAt: T0, at: T0 + 1 },
      { id: bad!.id, lease: bad!.lease, status: 'failed', attempts: 1, firstAttemptAt: T0, at: T0 + 1, reason: 'HTTP 410' },
    ]);
    await store.close();
    const db = new Database(join(dataDir, 'eventrelay.db'), { readonly: true });
    try {
      const rows = db.prepare('SELECT message_id, body, last_error FROM deliveries ORDER BY id').all();
      expect(rows).to.deep.equal([
        { message_id: 'ok', body: '', last_error: null },
        { message_id: 'bad', body: '{"messageId":"bad"}', last_error: 'HTTP 410' },
      ]);
    } finally {
      db.close();
    }
  });

  it('leaves no delivered body readable in any file of the data directory after close', async () => {
    const dataDir = tempDir();
    const store = new SqliteStore({ dataDir });
    const marker = 'SECRET-BODY-MARKER-7f3a';
    const many = Array.from({ length: 500 }, (_, i) => ({
      ...delivery(`m${i}`),
      body: JSON.stringify({ messageId: `m${i}`, note: `${marker}-${i}`, padding: 'x'.repeat(300) }),
    }));
    await store.enqueue(many);
    const claimed = await store.claim('web', T0, 500, LEASE);
    await store.record(claimed.map((d) => ({ id: d.id, lease: d.lease, status: 'delivered' as const, attempts: 1, firstAttemptAt: T0, at: T0 + 1 })));
    const readable = () => readdirSync(dataDir).filter((file) => readFileSync(join(dataDir, file)).includes(marker));
    // While running: the WAL still holds the frames that wrote the bodies until a checkpoint (every prune).
    expect(readable()).to.include('eventrelay.db-wal');
    await store.prune(T0 - 1);
    expect(readable()).to.deep.equal([]);
    await store.enqueue([delivery('after')]);
    await store.close();
    expect(readdirSync(dataDir)).to.include('eventrelay.db');
    expect(readable()).to.deep.equal([]);
  });

  it('upgrades a data directory created before schema versions, keeping its queue and counters', async () => {
    const dataDir = tempDir();
    // The schema the releases before versioning created (step 1), with a queue in it.
    const old = new Database(join(dataDir, 'eventrelay.db'));
    old.pragma('journal_mode = WAL');
    old.exec(SQLITE_MIGRATIONS[0]!.up);
    old.prepare("UPDATE counters SET value = 7 WHERE name = 'accepted'").run();
    old.prepare('INSERT INTO messages (source, message_id, received_at) VALUES (?, ?, ?)').run('web', 'old-1', T0);
    old.prepare(
      'INSERT INTO deliveries (source, destination, kind, message_id, body, created_at, attempts, first_attempt_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ).run('web', 'Webhooks', 'message', 'old-1', '{"messageId":"old-1"}', T0, 2, T0, T0 + 50);
    expect(sqliteSchemaVersion(old)).to.equal(0);
    old.close();

    const store = new SqliteStore({ dataDir });
    try {
      const [due] = await store.claim('web', T0 + 50, 10, LEASE);
      expect(due).to.include({ messageId: 'old-1', attempts: 2, firstAttemptAt: T0, body: '{"messageId":"old-1"}' });
      expect(await store.counts()).to.deep.include({ accepted: 7, pending: 1, retrying: 1 });
      expect(await store.accept([accepted('old-1')])).to.deep.equal({ stored: 0, duplicates: 1, repeated: [true], leased: undefined });
      await store.record([{ id: due!.id, lease: due!.lease, status: 'delivered', attempts: 3, firstAttemptAt: T0, at: T0 + 60 }]);
      expect((await store.counts()).delivered).to.equal(1);
    } finally {
      await store.close();
    }
    const db = new Database(join(dataDir, 'eventrelay.db'), { readonly: true });
    try {
      expect(sqliteSchemaVersion(db)).to.equal(SQLITE_MIGRATIONS.length);
      const steps = db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all() as Array<{ version: number }>;
      expect(steps.map((s) => s.version)).to.deep.equal(SQLITE_MIGRATIONS.map((m) => m.version));
    } finally {
      db.close();
    }
  });

  it('upgrades a data directory of schema step 9 to batches: its queue is sealed, delivered and pruned with their links', async () => {
    const dataDir = tempDir();
    const old = new Database(join(dataDir, 'eventrelay.db'));
    old.pragma('journal_mode = WAL');
    old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    for (const step of SQLITE_MIGRATIONS.filter((m) => m.version <= 9)) {
      old.exec(step.up);
      old.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(step.version, step.name, T0);
    }
    old.prepare('INSERT INTO deliveries (source, destination, kind, message_id, body, created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run('web', 'Webhooks', 'message', 'old-1', '{"messageId":"old-1"}', T0, T0);
    expect(sqliteSchemaVersion(old)).to.equal(9);
    expect(logIndexes(old)).to.deep.equal(['log_messages_event']);
    old.close();

    const store = new SqliteStore({ dataDir });
    try {
      const [due] = await store.claim('web', T0, 10, LEASE);
      const body = `[${due!.body}]`;
      const [batch] = (await store.batches.seal([{ id: due!.id, lease: due!.lease }], [{ source: 'web', destination: 'Webhooks#0', messageId: 'b1', body, members: [due!.id] }], T0 + 1, LEASE))!;
      expect((await store.batches.members(batch!.id)).map((m) => m.messageId)).to.deep.equal(['old-1']);
      const result = await store.batches.recordBatches([{ id: batch!.id, lease: batch!.lease, status: 'delivered', attempts: 1, firstAttemptAt: T0 + 2, at: T0 + 3 }]);
      expect(result.members.map((m) => m.messageId)).to.deep.equal(['old-1']);
      expect(await store.counts()).to.deep.include({ delivered: 1, pending: 0 });
      // The batch's row and the call's went at the prune, and the links with them.
      expect(await store.prune(T0 + 4)).to.equal(2);
    } finally {
      await store.close();
    }
    const db = new Database(join(dataDir, 'eventrelay.db'), { readonly: true });
    try {
      expect(sqliteSchemaVersion(db)).to.equal(SQLITE_MIGRATIONS.length);
      // Step 9's index on the log's event name is gone (step 11): it cost every logged track call.
      expect(logIndexes(db)).to.deep.equal([]);
      expect(db.prepare('SELECT count(*) AS n FROM batch_members').get()).to.deep.equal({ n: 0 });
      expect(db.prepare('SELECT count(*) AS n FROM deliveries').get()).to.deep.equal({ n: 0 });
    } finally {
      db.close();
    }
  });

  it('refuses a data directory whose schema is newer than this release', () => {
    const dataDir = tempDir();
    new SqliteStore({ dataDir }).close();
    const db = new Database(join(dataDir, 'eventrelay.db'));
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(SQLITE_MIGRATIONS.length + 1, 'from the future', T0);
    db.close();
    expect(() => new SqliteStore({ dataDir })).to.throw(StoreError, /newer than this eventrelay knows/).with.property('code', 'ERR_STORE_SCHEMA');
  });

  it('refuses a second store on the same directory', async () => {
    const dataDir = tempDir();
    const first = new SqliteStore({ dataDir });
    try {
      await first.accept([accepted('a')]);
      expect(() => new SqliteStore({ dataDir })).to.throw(StoreError, /Another forwarder is using the data directory/).with.property('code', 'ERR_STORE_LOCKED');
    } finally {
      await first.close();
    }
  });

  it('refuses calls after close', async () => {
    const store = new SqliteStore({ dataDir: tempDir() });
    await store.close();
    await store.close();
    let error: unknown;
    try {
      await store.accept([accepted('a')]);
    } catch (e) {
      error = e;
    }
    expect(error).to.be.instanceOf(StoreError).with.property('code', 'ERR_STORE_CLOSED');
  });
});

after(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
