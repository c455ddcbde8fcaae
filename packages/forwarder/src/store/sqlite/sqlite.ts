import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import createDebug from 'debug';
import { ConfigError, StoreError } from 'eventrelay/internal';
import { migrateSqlite } from './sqlite-schema';
import { systemClock } from 'eventrelay/internal';
import type { Clock } from 'eventrelay/internal';
import { SqliteSetup } from './sqlite-setup';
import { SqliteDeliveryLog } from './sqlite-log';
import { SqliteEndpointStore } from './sqlite-endpoints';
import { SqliteUsageStore } from './sqlite-usage';
import { SqliteBatches } from './sqlite-batches';
import { dayOf, USAGE_DAYS_KEPT } from '../usage';
import { MemoryRateBudget } from '../rate-budget';
import type { DeliveryLog, DeliveryLogOptions } from '../contract';
import { leasedDelivery, toPendingDelivery } from '../sql-rows';
import type { ClaimedRow } from '../sql-rows';
import { SourceDeletedError } from '../contract';
import { PRUNE_CHUNK, QUEUE } from './sql';
import type { AcceptedMessage, AcceptLease, AcceptResult, AudienceChange, DeliveryOutcome, ForwarderStore, LeaseRequest, NewDelivery, PendingDelivery, RecordResult, StoreCounts } from '../contract';
import { AUDIENCE_CHUNK, audienceChange, audienceChunks, KeyedTurns, yieldToEventLoop } from '../audience-change';

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
  /** The time the rate budgets count in (the forwarder's clock). Default: the system's. */
  readonly clock?: Clock;
}

const log = createDebug('eventrelay:forwarder');

/**
 * Longest time a delivered body stays readable in the WAL after it was erased, in ms: the WAL is
 * checkpointed and truncated this long after the first erasure (so at most once a second under load).
 */
const SCRUB_DELAY = 1000;

type DeliveryRow = ClaimedRow & { lease: number; next_attempt_at: number };
/** What a delivered or failed outcome's update returns of its row. */
type FinishedRow = { source: string; order_key: string | null };

interface AcceptRequest {
  readonly messages: readonly AcceptedMessage[];
  readonly lease: AcceptLease | undefined;
  /** The id the request's source must still have (see ForwarderStore#accept). */
  readonly sourceId: string | undefined;
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
      'Install it beside @eventrelay/forwarder (npm install better-sqlite3), or set "storage": { "type": "memory" } to run without durability.',
      'storage.type',
    );
  }
}

/** The queue's statements, each prepared once from its text in `sql.ts`. */
function prepareQueue(db: BetterSqlite3.Database) {
  return {
    insertMessage: db.prepare(QUEUE.insertMessage),
    insertDelivery: db.prepare(QUEUE.insertDelivery),
    insertLeased: db.prepare(QUEUE.insertLeased),
    keyPending: db.prepare(QUEUE.keyPending).pluck(),
    addCounter: db.prepare(QUEUE.addCounter),
    due: db.prepare(QUEUE.due),
    holdBehind: db.prepare(QUEUE.holdBehind),
    orderOf: db.prepare(QUEUE.orderOf),
    waitingFor: db.prepare(QUEUE.waitingFor).pluck(),
    lease: db.prepare(QUEUE.lease),
    nextDue: db.prepare(QUEUE.nextDue),
    retry: db.prepare(QUEUE.retry),
    delivered: db.prepare(QUEUE.delivered),
    deliveredOrdered: db.prepare(QUEUE.deliveredOrdered),
    deliveredAbandoned: db.prepare(QUEUE.deliveredAbandoned),
    sourceLive: db.prepare(QUEUE.sourceLive).pluck(),
    failed: db.prepare(QUEUE.failed),
    failedOrdered: db.prepare(QUEUE.failedOrdered),
    counters: db.prepare(QUEUE.counters),
    queue: db.prepare(QUEUE.queue),
    audienceSynced: db.prepare(QUEUE.audienceSynced),
    audienceMembers: db.prepare(QUEUE.audienceMembers).pluck(),
    audienceMark: db.prepare(QUEUE.audienceMark),
    memberAdd: db.prepare(QUEUE.memberAdd),
    memberRemove: db.prepare(QUEUE.memberRemove),
    pruneDeliveries: db.prepare(QUEUE.pruneDeliveries),
    pruneMessages: db.prepare(QUEUE.pruneMessages),
  };
}

/**
 * Opens the database file in `dataDir` (made when missing). Only this process uses it (exclusive
 * mode), so a lock means another forwarder: fail fast instead of waiting for the driver's 5 s.
 */
function openDatabase(dataDir: string): BetterSqlite3.Database {
  const Database = loadDriver();
  const file = join(dataDir, 'eventrelay.db');
  try {
    mkdirSync(dataDir, { recursive: true });
    return new Database(file, { timeout: 250 });
  } catch (error) {
    // A file where the directory should be, no permission, a read-only disk: the config's field.
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new StoreError(
      `Cannot open the data directory ${dataDir} (${code}): it must be a directory this user can write, or one it can create`,
      'ERR_STORE_UNAVAILABLE',
      { cause: error, field: 'storage.dataDir' },
    );
  }
}

/**
 * The default ForwarderStore: one SQLite file in WAL mode. The database is opened in
 * exclusive locking mode, so a second forwarder on the same data directory is refused instead
 * of delivering every message twice; the OS drops the lock when the process dies, even by SIGKILL.
 * Being the only user, it releases on open the leases a killed predecessor held.
 *
 * Delivered bodies do not stay readable on disk: `secure_delete` zeroes the space they leave in
 * the database file, and the WAL (which still holds the frames that wrote them, and copies them
 * into the database file at its automatic checkpoints) is checkpointed and truncated within a
 * second after bodies were erased (`scrubSoon`), at every prune and at close.
 *
 * Each transaction is a method (`acceptAll`, `insertAll`, `claimRows`, `recordAll`,
 * `writeAudienceChunk`) that better-sqlite3's `db.transaction` wraps once, at construction.
 */
export class SqliteStore implements ForwarderStore {
  private readonly db: BetterSqlite3.Database;
  private readonly statements: ReturnType<typeof prepareQueue>;
  private readonly durable: boolean;
  private syncMode: 'FULL' | 'NORMAL' | undefined;
  private syncFull!: BetterSqlite3.Statement;
  private syncNormal!: BetterSqlite3.Statement;
  /** Requests waiting for the next group commit. */
  private acceptQueue: Array<AcceptRequest & { resolve: (r: AcceptResult) => void; reject: (e: unknown) => void }> = [];
  private readonly acceptTx: (requests: readonly AcceptRequest[]) => (AcceptResult | SourceDeletedError)[];
  private readonly enqueueTx: (deliveries: readonly NewDelivery[]) => void;
  private readonly claimTx: (source: string, now: number, limit: number, lease: LeaseRequest) => DeliveryRow[];
  private readonly recordTx: (outcomes: readonly DeliveryOutcome[]) => RecordResult;
  private readonly audienceTx: (source: string, audience: string, chunk: AudienceChange, plan: (change: AudienceChange) => readonly NewDelivery[]) => void;
  private readonly audienceTurns = new KeyedTurns();
  private closed = false;
  private scrubTimer: NodeJS.Timeout | undefined;
  /** The sources and their settings (runtime setup), in this database. */
  readonly setup: SqliteSetup;
  /** Endpoint states in this database: a disabled URL stays disabled across restarts. */
  readonly endpoints: SqliteEndpointStore;
  /** What each source sends and its usage, in this database. */
  readonly usage: SqliteUsageStore;
  /** The queue's batches, in the queue's table (`deliveries`) and `batch_members`. */
  readonly batches: SqliteBatches;
  /** One process uses the file (exclusive mode): its rate budgets are exact in memory. */
  readonly rateBudget: MemoryRateBudget;
  readonly shared = false;
  readonly cluster = null;

  constructor(options: SqliteStoreOptions) {
    this.rateBudget = new MemoryRateBudget(options.clock ?? systemClock);
    this.durable = (options.synchronous ?? 'full') === 'full';
    this.db = openDatabase(options.dataDir);
    this.initialize(options.dataDir);
    const db = this.db;
    this.statements = prepareQueue(db);
    this.setup = new SqliteSetup(db, (write) => {
      this.assertOpen();
      // A change of setup is acknowledged to the operator: as durable as accepted messages.
      if (write) this.sync(this.durable ? 'FULL' : 'NORMAL');
    });
    this.endpoints = new SqliteEndpointStore(db);
    // Counts are written without an fsync of their own: a power cut may lose the last second of them, never a message.
    this.usage = new SqliteUsageStore(db, () => {
      this.assertOpen();
      this.sync('NORMAL');
    });
    // Batches are written as outcomes are (no fsync of their own): a lost seal means the calls are claimed again.
    this.batches = new SqliteBatches(db, () => {
      this.assertOpen();
      this.sync('NORMAL');
    }, () => this.scrubSoon());
    this.acceptTx = db.transaction(this.acceptAll.bind(this));
    this.enqueueTx = db.transaction(this.insertAll.bind(this));
    this.claimTx = db.transaction(this.claimRows.bind(this));
    this.recordTx = db.transaction(this.recordAll.bind(this));
    this.audienceTx = db.transaction(this.writeAudienceChunk.bind(this));
  }

  /**
   * Sets the database up: exclusive, WAL, `secure_delete`, the schema migrated, and the leases a
   * killed predecessor held released. Closes it and refuses with ERR_STORE_LOCKED when another
   * forwarder holds it.
   */
  private initialize(dataDir: string): void {
    try {
      this.db.pragma('locking_mode = EXCLUSIVE');
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('secure_delete = ON');
      this.syncFull = this.db.prepare(QUEUE.syncFull);
      this.syncNormal = this.db.prepare(QUEUE.syncNormal);
      // SQLite applies `PRAGMA synchronous = ...` when it prepares the statement, and the first
      // step of a statement so prepared does nothing: the last one prepared (NORMAL) was in force,
      // and the first FULL run left it so, whatever `syncMode` said. One run of each first.
      this.syncNormal.run();
      this.syncFull.run();
      this.sync(this.durable ? 'FULL' : 'NORMAL');
      migrateSqlite(this.db);
      this.db.prepare(QUEUE.releaseLeases).run(Date.now());
    } catch (error) {
      this.db.close();
      if ((error as { code?: string }).code === 'SQLITE_BUSY') {
        throw new StoreError(
          `Another forwarder is using the data directory ${dataDir}; stop it or pass another --data directory.`,
          'ERR_STORE_LOCKED',
          { cause: error, field: 'storage.dataDir' },
        );
      }
      throw error;
    }
  }

  private insertDelivery(d: NewDelivery): void {
    this.statements.insertDelivery.run(d.source, d.destination, d.kind, d.messageId, d.body, d.createdAt, d.createdAt, d.orderKey ?? null);
  }

  /** The group commit's transaction: each request whole, or refused when its source was deleted. */
  private acceptAll(requests: readonly AcceptRequest[]): (AcceptResult | SourceDeletedError)[] {
    const s = this.statements;
    let total = 0;
    let duplicates = 0;
    const results: (AcceptResult | SourceDeletedError)[] = [];
    for (const { messages, lease, sourceId } of requests) {
      // In the same transaction as the inserts: a deletion comes wholly before or after it.
      const first = messages[0];
      if (sourceId !== undefined && first !== undefined && s.sourceLive.get(first.source, sourceId) === undefined) {
        results.push(new SourceDeletedError(first.source));
        continue;
      }
      let stored = 0;
      const leased: PendingDelivery[] = [];
      const repeated: boolean[] = [];
      for (const m of messages) {
        if (s.insertMessage.run(m.source, m.messageId, m.receivedAt).changes === 0) {
          repeated.push(true);
          continue;
        }
        repeated.push(false);
        stored++;
        for (const d of m.deliveries) {
          // An ordered delivery behind another of its key (stored before, or earlier in this
          // transaction) is claimed in its turn.
          if (lease === undefined || (d.orderKey !== undefined && s.keyPending.get(d.source, d.orderKey) !== undefined)) {
            this.insertDelivery(d);
            continue;
          }
          const until = lease.now + lease.ms;
          const row = s.insertLeased.run(d.source, d.destination, d.kind, d.messageId, d.body, d.createdAt, until, lease.owner, d.orderKey ?? null);
          leased.push(leasedDelivery(d, Number(row.lastInsertRowid)));
        }
      }
      total += messages.length;
      duplicates += messages.length - stored;
      // One shape, leased or not (AcceptResult.leased).
      results.push({ stored, duplicates: messages.length - stored, repeated, leased: lease === undefined ? undefined : leased });
    }
    s.addCounter.run(total, 'accepted');
    if (duplicates > 0) s.addCounter.run(duplicates, 'duplicates');
    return results;
  }

  /** Deliveries made by no ingested call, in one transaction. */
  private insertAll(deliveries: readonly NewDelivery[]): void {
    for (const d of deliveries) this.insertDelivery(d);
  }

  /** The claim's transaction: the due rows, each leased. */
  private claimRows(source: string, now: number, limit: number, lease: LeaseRequest): DeliveryRow[] {
    const s = this.statements;
    const rows = s.due.all(source, now, limit) as DeliveryRow[];
    for (const row of rows) s.lease.run(lease.owner, now + lease.ms, row.id);
    return rows;
  }

  /** The outcomes' transaction (see ForwarderStore#record). */
  private recordAll(outcomes: readonly DeliveryOutcome[]): RecordResult {
    const s = this.statements;
    let delivered = 0;
    let failed = 0;
    let retried = 0;
    /** Delivered after all, having been counted failed by their source's deletion. */
    let revived = 0;
    const stale: number[] = [];
    const released: string[] = [];
    /** An ordered delivery finished: the next of its key, if any, may be claimed now. */
    const finished = (row: FinishedRow | undefined): number => {
      if (row === undefined) return 0;
      if (row.order_key !== null && s.keyPending.get(row.source, row.order_key) !== undefined) released.push(row.source);
      return 1;
    };
    for (const o of outcomes) {
      let changes: number;
      if (o.status === 'retry') {
        changes = s.retry.run(o.attempts, o.firstAttemptAt ?? null, o.nextAttemptAt, o.error ?? null, o.id, o.lease).changes;
        retried += changes;
        if (changes > 0) {
          const row = s.orderOf.get(o.id) as { source: string; order_key: string | null };
          if (row.order_key !== null) s.holdBehind.run({ at: o.nextAttemptAt, source: row.source, key: row.order_key, id: o.id });
        }
      } else if (o.status === 'delivered') {
        changes = o.orderKey === undefined
          ? s.delivered.run(o.attempts, o.firstAttemptAt, o.at, o.id).changes
          : finished(s.deliveredOrdered.get(o.attempts, o.firstAttemptAt, o.at, o.id) as FinishedRow | undefined);
        if (changes === 0) {
          changes = s.deliveredAbandoned.run(o.attempts, o.firstAttemptAt, o.at, o.id, o.lease).changes;
          revived += changes;
        }
        delivered += changes;
      } else {
        changes = o.orderKey === undefined
          ? s.failed.run(o.attempts, o.firstAttemptAt ?? null, o.at, o.reason, o.id, o.lease).changes
          : finished(s.failedOrdered.get(o.attempts, o.firstAttemptAt ?? null, o.at, o.reason, o.id, o.lease) as FinishedRow | undefined);
        failed += changes;
      }
      if (changes === 0) stale.push(o.id);
    }
    if (delivered > 0) {
      s.addCounter.run(delivered, 'delivered');
      this.scrubSoon();
    }
    if (failed - revived !== 0) s.addCounter.run(failed - revived, 'failed');
    return { recorded: delivered + failed + retried, stale, released };
  }

  /** One chunk of an audience sync with its notices; the first marks the audience synced. */
  private writeAudienceChunk(source: string, audience: string, chunk: AudienceChange, plan: (change: AudienceChange) => readonly NewDelivery[]): void {
    const s = this.statements;
    for (const id of chunk.added) s.memberAdd.run(source, audience, id);
    for (const id of chunk.removed) s.memberRemove.run(source, audience, id);
    s.audienceMark.run(source, audience, Date.now());
    // As before the split: the notices go in through the enqueue transaction, nested (a savepoint).
    this.enqueueTx(plan(chunk));
  }

  /** The database handle, for the delivery log's own tables (`SqliteDeliveryLog`). */
  get database(): BetterSqlite3.Database {
    return this.db;
  }

  /**
   * Group commit: the requests that arrive in the same turn of the event loop are stored in one
   * transaction (one fsync), each request whole. Resolves once that transaction committed.
   */
  accept(messages: readonly AcceptedMessage[], lease?: AcceptLease, sourceId?: string): Promise<AcceptResult> {
    return new Promise((resolve, reject) => {
      this.assertOpen();
      this.acceptQueue.push({ messages, lease, sourceId, resolve, reject });
      if (this.acceptQueue.length === 1) setImmediate(() => this.commitAccepts());
    });
  }

  private commitAccepts(): void {
    const queue = this.acceptQueue;
    this.acceptQueue = [];
    try {
      this.assertOpen();
      this.sync(this.durable ? 'FULL' : 'NORMAL');
      const results = this.acceptTx(queue);
      queue.forEach((q, i) => {
        const result = results[i]!;
        if (result instanceof SourceDeletedError) q.reject(result);
        else q.resolve(result);
      });
    } catch (error) {
      for (const q of queue) q.reject(error);
    }
  }

  /**
   * Sets `PRAGMA synchronous` when it differs: accepted messages get FULL, outcomes NORMAL. The
   * two statements are prepared once: `pragma()` prepares one per call, and the mode changes
   * about twice per group commit.
   */
  private sync(mode: 'FULL' | 'NORMAL'): void {
    if (this.syncMode === mode) return;
    (mode === 'FULL' ? this.syncFull : this.syncNormal).run();
    this.syncMode = mode;
  }

  async enqueue(deliveries: readonly NewDelivery[]): Promise<void> {
    this.assertOpen();
    this.sync(this.durable ? 'FULL' : 'NORMAL');
    this.enqueueTx(deliveries);
  }

  async claim(source: string, now: number, limit: number, lease: LeaseRequest): Promise<PendingDelivery[]> {
    this.assertOpen();
    // Claims only write the lease: no fsync of their own (a lost lease after a power cut only
    // makes the delivery due at once).
    this.sync('NORMAL');
    return this.claimTx(source, now, limit, lease).map((row) => toPendingDelivery(row, row.lease + 1, row.next_attempt_at));
  }

  async waitingFor(source: string, messageId: string): Promise<string | undefined> {
    this.assertOpen();
    return (this.statements.waitingFor.get(source, messageId) as string | undefined) ?? undefined;
  }

  async nextDueAfter(source: string, now: number): Promise<number | undefined> {
    this.assertOpen();
    const row = this.statements.nextDue.get(source, now) as { at: number | null };
    return row.at ?? undefined;
  }

  async record(outcomes: readonly DeliveryOutcome[]): Promise<RecordResult> {
    this.assertOpen();
    if (outcomes.length === 0) return { recorded: 0, stale: [], released: [] };
    // In WAL mode the next FULL commit fsyncs these frames too; until then a power cut may undo
    // an outcome, which only means sending that delivery again.
    this.sync('NORMAL');
    return this.recordTx(outcomes);
  }

  async syncAudience(
    source: string,
    audience: string,
    members: readonly string[],
    plan: (change: AudienceChange) => readonly NewDelivery[],
  ): Promise<AudienceChange> {
    this.assertOpen();
    return this.audienceTurns.run(`${source}\u0000${audience}`, async () => {
      const s = this.statements;
      const synced = s.audienceSynced.get(source, audience) !== undefined;
      let current: Set<string> | undefined;
      if (synced) {
        // Read in pages, letting requests in between: an audience may have hundreds of thousands of members.
        current = new Set();
        for (let after = ''; ;) {
          this.assertOpen();
          const page = s.audienceMembers.all(source, audience, after) as string[];
          for (const id of page) current.add(id);
          if (page.length < AUDIENCE_CHUNK) break;
          after = page[page.length - 1]!;
          await yieldToEventLoop();
        }
      }
      const change = await audienceChange(current, members);
      // One transaction per chunk, each with its notices; the first one marks the audience synced.
      const chunks = audienceChunks(change);
      if (chunks.length === 0) chunks.push({ firstSync: change.firstSync, added: [], removed: [] });
      for (const chunk of chunks) {
        this.assertOpen();
        this.sync(this.durable ? 'FULL' : 'NORMAL');
        this.audienceTx(source, audience, chunk, plan);
        await yieldToEventLoop();
      }
      return change;
    });
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

  /** Removes finished rows in chunks, then checkpoints the WAL so that delivered bodies leave it. */
  async prune(before: number): Promise<number> {
    let removed = this.closed ? 0 : this.setup.prune(before) + (await this.usage.prune(dayOf(before) - USAGE_DAYS_KEPT));
    for (const statement of [this.statements.pruneDeliveries, this.statements.pruneMessages]) {
      for (;;) {
        if (this.closed) return removed;
        const changes = statement.run(before).changes;
        removed += changes;
        if (changes < PRUNE_CHUNK) break;
        // Let requests in between chunks.
        await yieldToEventLoop();
      }
    }
    if (!this.closed) this.checkpoint();
    return removed;
  }

  /**
   * Checkpoints and truncates the WAL within SCRUB_DELAY, once: called when delivered bodies were
   * erased (here, or in the delivery log's tables), so that the frames holding them go.
   */
  /** The delivery log in this database; erasing a delivered body schedules the WAL's scrub. */
  openLog(options: DeliveryLogOptions): DeliveryLog {
    return new SqliteDeliveryLog(this.db, options, () => this.scrubSoon(), () => this.sync('NORMAL'));
  }

  scrubSoon(): void {
    if (this.closed || this.scrubTimer !== undefined) return;
    this.scrubTimer = setTimeout(() => {
      this.scrubTimer = undefined;
      if (this.closed) return;
      try {
        this.checkpoint();
      } catch (error) {
        // Busy or failing now: the next erasure, prune or close tries again.
        log('WAL checkpoint failed: %s', (error as Error).message);
      }
    }, SCRUB_DELAY);
    this.scrubTimer.unref();
  }

  /**
   * Copies the WAL into the database file and truncates it: the WAL keeps every page version
   * written since the last checkpoint, bodies of delivered messages included.
   */
  checkpoint(): void {
    this.assertOpen();
    this.db.pragma('wal_checkpoint(TRUNCATE)');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    clearTimeout(this.scrubTimer);
    if (this.acceptQueue.length > 0) this.commitAccepts();
    try {
      this.checkpoint();
    } finally {
      this.closed = true;
      this.db.close();
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreError('The store is closed', 'ERR_STORE_CLOSED');
  }
}

/** Opens (creating when missing) the embedded SQLite store in `options.dataDir`. */
export function openSqliteStore(options: SqliteStoreOptions): SqliteStore {
  return new SqliteStore(options);
}
