import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { ConfigError, EventRelayError } from '../../errors';
import { audienceChange } from './store';
import type {
  AcceptedMessage,
  AcceptResult,
  AudienceChange,
  DeliveryKind,
  DeliveryOutcome,
  ForwarderStore,
  NewDelivery,
  PendingDelivery,
  StoreCounts,
} from './store';

export interface SqliteStoreOptions {
  /** Directory of the database file `eventrelay.db`; created when missing. */
  readonly dataDir: string;
  /**
   * `full` (default): each commit of accepted messages is fsynced before the API answers, so an
   * acknowledged message survives a power loss. `normal`: commits reach the OS at once (a killed
   * process loses nothing) but are fsynced only at checkpoints. Either way, attempt outcomes are
   * written without their own fsync: losing one to a power cut means a delivery is sent again
   * (at-least-once; receivers drop it by messageId), never that a message is lost.
   */
  readonly synchronous?: 'full' | 'normal';
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS messages (
  id INTEGER PRIMARY KEY,
  source TEXT NOT NULL,
  message_id TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  UNIQUE (source, message_id)
);
CREATE TABLE IF NOT EXISTS deliveries (
  id INTEGER PRIMARY KEY,
  source TEXT NOT NULL,
  destination TEXT NOT NULL,
  kind TEXT NOT NULL,
  message_id TEXT NOT NULL,
  body TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  status INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  first_attempt_at INTEGER,
  next_attempt_at INTEGER NOT NULL,
  finished_at INTEGER,
  last_error TEXT
);
CREATE INDEX IF NOT EXISTS pending_by_source ON deliveries (source, next_attempt_at, id) WHERE status = 0;
CREATE TABLE IF NOT EXISTS audiences (
  source TEXT NOT NULL,
  audience TEXT NOT NULL,
  synced_at INTEGER NOT NULL,
  PRIMARY KEY (source, audience)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audience_members (
  source TEXT NOT NULL,
  audience TEXT NOT NULL,
  user_id TEXT NOT NULL,
  PRIMARY KEY (source, audience, user_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT OR IGNORE INTO counters (name, value) VALUES ('accepted', 0), ('duplicates', 0), ('delivered', 0), ('failed', 0);
`;

const PENDING = 0;
const DELIVERED = 1;
const FAILED = 2;

/** Rows removed per statement when pruning, so a large prune never blocks the event loop for long. */
const PRUNE_CHUNK = 2000;

interface DeliveryRow {
  id: number;
  source: string;
  destination: string;
  kind: DeliveryKind;
  message_id: string;
  body: string;
  created_at: number;
  attempts: number;
  first_attempt_at: number | null;
  next_attempt_at: number;
}

type DatabaseConstructor = typeof BetterSqlite3;

/**
 * better-sqlite3 is an optional peer dependency: it is required here, when a forwarder opens
 * its store, and never by the client or the webhook helper.
 */
function loadDriver(): DatabaseConstructor {
  try {
    return createRequire(import.meta.url)('better-sqlite3') as DatabaseConstructor;
  } catch (error) {
    throw new ConfigError(
      `The forwarder's durable store needs the better-sqlite3 package, which could not be loaded (${(error as NodeJS.ErrnoException).code ?? 'error'}). ` +
        'Install it beside eventrelay (npm install better-sqlite3), or set "storage": { "type": "memory" } to run without durability.',
      'storage.type',
    );
  }
}

/**
 * The default ForwarderStore: one SQLite file in WAL mode. The database is opened in
 * exclusive locking mode, so a second forwarder on the same data directory is refused instead
 * of delivering every message twice; the OS drops the lock when the process dies, even by SIGKILL.
 */
export class SqliteStore implements ForwarderStore {
  private readonly db: BetterSqlite3.Database;
  private readonly statements;
  private readonly acceptTx: (requests: readonly (readonly AcceptedMessage[])[]) => AcceptResult[];
  private readonly durable: boolean;
  private syncMode: 'FULL' | 'NORMAL' | undefined;
  /** Requests waiting for the next group commit. */
  private acceptQueue: Array<{ messages: readonly AcceptedMessage[]; resolve: (r: AcceptResult) => void; reject: (e: unknown) => void }> = [];
  private readonly enqueueTx: (deliveries: readonly NewDelivery[]) => void;
  private readonly recordTx: (outcomes: readonly DeliveryOutcome[]) => void;
  private closed = false;

  constructor(options: SqliteStoreOptions) {
    const Database = loadDriver();
    mkdirSync(options.dataDir, { recursive: true });
    const file = join(options.dataDir, 'eventrelay.db');
    // No other connection shares the file (exclusive mode), so a lock means another forwarder:
    // fail fast instead of waiting for the driver's default 5 s.
    this.db = new Database(file, { timeout: 250 });
    try {
      this.db.pragma('locking_mode = EXCLUSIVE');
      this.db.pragma('journal_mode = WAL');
      this.durable = (options.synchronous ?? 'full') === 'full';
      this.sync(this.durable ? 'FULL' : 'NORMAL');
      this.db.exec(SCHEMA);
    } catch (error) {
      this.db.close();
      if ((error as { code?: string }).code === 'SQLITE_BUSY') {
        throw new EventRelayError(
          `Another forwarder is using the data directory ${options.dataDir}; stop it or pass another --data directory.`,
          'ERR_STORE_LOCKED',
          { cause: error },
        );
      }
      throw error;
    }
    const db = this.db;
    this.statements = {
      insertMessage: db.prepare('INSERT OR IGNORE INTO messages (source, message_id, received_at) VALUES (?, ?, ?)'),
      insertDelivery: db.prepare(
        'INSERT INTO deliveries (source, destination, kind, message_id, body, created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      addCounter: db.prepare('UPDATE counters SET value = value + ? WHERE name = ?'),
      due: db.prepare(
        `SELECT id, source, destination, kind, message_id, body, created_at, attempts, first_attempt_at, next_attempt_at
         FROM deliveries WHERE status = ${PENDING} AND source = ? AND next_attempt_at <= ?
         AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY next_attempt_at, id LIMIT ?`,
      ),
      nextDue: db.prepare(`SELECT min(next_attempt_at) AS at FROM deliveries WHERE status = ${PENDING} AND source = ? AND next_attempt_at > ?`),
      retry: db.prepare(
        `UPDATE deliveries SET attempts = ?, first_attempt_at = ?, next_attempt_at = ?, last_error = ? WHERE id = ? AND status = ${PENDING}`,
      ),
      // A delivered body is dropped at once: it is not needed any more, and user data should not
      // linger (deletion requests). A failed one is kept until pruned, for inspection.
      delivered: db.prepare(
        `UPDATE deliveries SET status = ${DELIVERED}, attempts = ?, first_attempt_at = ?, finished_at = ?, body = '' WHERE id = ? AND status = ${PENDING}`,
      ),
      failed: db.prepare(
        `UPDATE deliveries SET status = ${FAILED}, attempts = ?, first_attempt_at = ?, finished_at = ?, last_error = ? WHERE id = ? AND status = ${PENDING}`,
      ),
      counters: db.prepare('SELECT name, value FROM counters'),
      queue: db.prepare(
        `SELECT count(*) AS pending, coalesce(sum(attempts > 0), 0) AS retrying, min(created_at) AS oldest FROM deliveries WHERE status = ${PENDING}`,
      ),
      audienceSynced: db.prepare('SELECT 1 FROM audiences WHERE source = ? AND audience = ?'),
      audienceMembers: db.prepare('SELECT user_id FROM audience_members WHERE source = ? AND audience = ?').pluck(),
      audienceMark: db.prepare('INSERT OR REPLACE INTO audiences (source, audience, synced_at) VALUES (?, ?, ?)'),
      memberAdd: db.prepare('INSERT OR IGNORE INTO audience_members (source, audience, user_id) VALUES (?, ?, ?)'),
      memberRemove: db.prepare('DELETE FROM audience_members WHERE source = ? AND audience = ? AND user_id = ?'),
      pruneDeliveries: db.prepare(
        `DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE status != ${PENDING} AND finished_at < ? LIMIT ${PRUNE_CHUNK})`,
      ),
      pruneMessages: db.prepare(
        `DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE received_at < ? ORDER BY id LIMIT ${PRUNE_CHUNK})`,
      ),
    };
    const s = this.statements;

    const insert = (d: NewDelivery): void => {
      s.insertDelivery.run(d.source, d.destination, d.kind, d.messageId, d.body, d.createdAt, d.createdAt);
    };
    this.acceptTx = db.transaction((requests: readonly (readonly AcceptedMessage[])[]) => {
      let total = 0;
      let duplicates = 0;
      const results = requests.map((messages) => {
        let stored = 0;
        for (const m of messages) {
          if (s.insertMessage.run(m.source, m.messageId, m.receivedAt).changes === 0) continue;
          stored++;
          for (const d of m.deliveries) insert(d);
        }
        total += messages.length;
        duplicates += messages.length - stored;
        return { stored, duplicates: messages.length - stored };
      });
      s.addCounter.run(total, 'accepted');
      if (duplicates > 0) s.addCounter.run(duplicates, 'duplicates');
      return results;
    });
    this.enqueueTx = db.transaction((deliveries: readonly NewDelivery[]) => {
      for (const d of deliveries) insert(d);
    });
    this.recordTx = db.transaction((outcomes: readonly DeliveryOutcome[]) => {
      let delivered = 0;
      let failed = 0;
      for (const o of outcomes) {
        if (o.status === 'retry') {
          s.retry.run(o.attempts, o.firstAttemptAt ?? null, o.nextAttemptAt, o.error ?? null, o.id);
        } else if (o.status === 'delivered') {
          delivered += s.delivered.run(o.attempts, o.firstAttemptAt, o.at, o.id).changes;
        } else {
          failed += s.failed.run(o.attempts, o.firstAttemptAt ?? null, o.at, o.reason, o.id).changes;
        }
      }
      if (delivered > 0) s.addCounter.run(delivered, 'delivered');
      if (failed > 0) s.addCounter.run(failed, 'failed');
    });
  }

  /** The database handle, for the delivery log's own tables (`SqliteDeliveryLog`). */
  get database(): BetterSqlite3.Database {
    return this.db;
  }

  /**
   * Group commit: the requests that arrive in the same turn of the event loop are stored in one
   * transaction (one fsync), each request whole. Resolves once that transaction committed.
   */
  accept(messages: readonly AcceptedMessage[]): Promise<AcceptResult> {
    return new Promise((resolve, reject) => {
      this.assertOpen();
      this.acceptQueue.push({ messages, resolve, reject });
      if (this.acceptQueue.length === 1) setImmediate(() => this.commitAccepts());
    });
  }

  private commitAccepts(): void {
    const queue = this.acceptQueue;
    this.acceptQueue = [];
    try {
      this.assertOpen();
      this.sync(this.durable ? 'FULL' : 'NORMAL');
      const results = this.acceptTx(queue.map((q) => q.messages));
      queue.forEach((q, i) => q.resolve(results[i]!));
    } catch (error) {
      for (const q of queue) q.reject(error);
    }
  }

  /** Sets `PRAGMA synchronous` when it differs: accepted messages get FULL, outcomes NORMAL. */
  private sync(mode: 'FULL' | 'NORMAL'): void {
    if (this.syncMode === mode) return;
    this.db.pragma(`synchronous = ${mode}`);
    this.syncMode = mode;
  }

  async enqueue(deliveries: readonly NewDelivery[]): Promise<void> {
    this.assertOpen();
    this.sync(this.durable ? 'FULL' : 'NORMAL');
    this.enqueueTx(deliveries);
  }

  async due(source: string, now: number, limit: number, exclude: ReadonlySet<number>): Promise<PendingDelivery[]> {
    this.assertOpen();
    // The ids in flight are skipped inside SQLite, so their bodies are never read again.
    const rows = this.statements.due.all(source, now, JSON.stringify([...exclude]), limit) as DeliveryRow[];
    return rows.map((row) => ({
      id: row.id,
      source: row.source,
      destination: row.destination,
      kind: row.kind,
      messageId: row.message_id,
      body: row.body,
      createdAt: row.created_at,
      attempts: row.attempts,
      firstAttemptAt: row.first_attempt_at ?? undefined,
      nextAttemptAt: row.next_attempt_at,
    }));
  }

  async nextDueAfter(source: string, now: number): Promise<number | undefined> {
    this.assertOpen();
    const row = this.statements.nextDue.get(source, now) as { at: number | null };
    return row.at ?? undefined;
  }

  async record(outcomes: readonly DeliveryOutcome[]): Promise<void> {
    this.assertOpen();
    if (outcomes.length === 0) return;
    // In WAL mode the next FULL commit fsyncs these frames too; until then a power cut may undo
    // an outcome, which only means sending that delivery again.
    this.sync('NORMAL');
    this.recordTx(outcomes);
  }

  async syncAudience(
    source: string,
    audience: string,
    members: readonly string[],
    plan: (change: AudienceChange) => readonly NewDelivery[],
  ): Promise<AudienceChange> {
    this.assertOpen();
    const s = this.statements;
    this.sync(this.durable ? 'FULL' : 'NORMAL');
    const run = this.db.transaction(() => {
      const synced = s.audienceSynced.get(source, audience) !== undefined;
      const current = synced ? new Set(s.audienceMembers.all(source, audience) as string[]) : undefined;
      const change = audienceChange(current, members);
      for (const id of change.added) s.memberAdd.run(source, audience, id);
      for (const id of change.removed) s.memberRemove.run(source, audience, id);
      s.audienceMark.run(source, audience, Date.now());
      this.enqueueTx(plan(change));
      return change;
    });
    return run();
  }

  async counts(): Promise<StoreCounts> {
    this.assertOpen();
    const totals: Record<string, number> = {};
    for (const row of this.statements.counters.all() as Array<{ name: string; value: number }>) totals[row.name] = row.value;
    const queue = this.statements.queue.get() as { pending: number; retrying: number; oldest: number | null };
    return {
      accepted: totals.accepted ?? 0,
      duplicates: totals.duplicates ?? 0,
      delivered: totals.delivered ?? 0,
      failed: totals.failed ?? 0,
      pending: queue.pending,
      retrying: queue.retrying,
      oldestPendingAt: queue.oldest ?? undefined,
    };
  }

  async prune(before: number): Promise<number> {
    let removed = 0;
    for (const statement of [this.statements.pruneDeliveries, this.statements.pruneMessages]) {
      for (;;) {
        if (this.closed) return removed;
        const changes = statement.run(before).changes;
        removed += changes;
        if (changes < PRUNE_CHUNK) break;
        // Let requests in between chunks.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
    return removed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.acceptQueue.length > 0) this.commitAccepts();
    this.closed = true;
    this.db.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new EventRelayError('The store is closed', 'ERR_STORE_CLOSED');
  }
}
