import { booleanArray, checkout, numberArray, pgText, shard, storedKey, textArray } from './pg-driver';
import { createRequire } from 'node:module';
import { leasedDelivery, toPendingDelivery } from '../sql-rows';
import type { ClaimedRow } from '../sql-rows';
import type { Client, Pool, PoolClient, PoolConfig } from 'pg';
import createDebug from 'debug';
import { ConfigError, StoreError } from 'eventrelay/internal';
import { LOCK_CLASS, LOCKS, migratePostgres } from './postgres-schema';
import { PostgresSetup } from './postgres-setup';
import { PostgresListener } from './postgres-listen';
import { PostgresCluster } from './postgres-cluster';
import { PostgresRateBudget } from './postgres-rate';
import { PostgresDeliveryLog } from './postgres-log';
import { PostgresEndpointStore } from './postgres-endpoints';
import { PostgresUsageStore } from './postgres-usage';
import { PostgresBatches } from './postgres-batches';
import { dayOf, USAGE_DAYS_KEPT } from '../usage';
import type { DeliveryLog, DeliveryLogOptions } from '../contract';
import { SourceDeletedError } from '../contract';
import { DELIVERED, FAILED, PENDING } from '../statuses';
import { redactUrl } from '../../redact';
import type { AcceptedMessage, AcceptLease, AcceptResult, AudienceChange, DeliveryOutcome, ForwarderStore, LeaseRequest, NewDelivery, PendingDelivery, RecordResult, StoreCounts } from '../contract';
import { AUDIENCE_CHUNK, audienceChange, audienceChunks, KeyedTurns } from '../audience-change';
import { ACCEPT, ACCEPT_ORDERED, CLAIM, INSERT_DELIVERIES, LOCK, PRUNE, PRUNE_CHUNK, QUEUE, RECORD, RECORD_ABANDONED, RECORD_DELIVERED } from './sql';

const log = createDebug('eventrelay:forwarder');

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:5432/database`; the password never appears in errors or logs. */
  readonly url: string;
  /**
   * Connections for the writes that must be durable (ingestion, deletions, audience syncs). The
   * delivery loop's claims and outcomes use a second pool of half as many (at least 2). Default 10.
   */
  readonly poolSize?: number;
  /** Longest wait for a connection, in ms; at start, an unreachable server fails after it. Default 5000. */
  readonly connectTimeout?: number;
  /** The config field named in errors. Default `storage.url`. */
  readonly field?: string;
}

const DEFAULTS = { poolSize: 10, connectTimeout: 5000 } as const;

/** Most messages in one group commit. */
const GROUP_MESSAGES = 5000;
type PgModule = typeof import('pg');

/** `pg` is an optional peer dependency, required only when a forwarder opens this store. */
export function loadDriver(load: (id: string) => unknown = createRequire(import.meta.url)): PgModule {
  try {
    return load('pg') as PgModule;
  } catch (error) {
    throw new ConfigError(
      `"storage": { "type": "postgres" } needs the pg package, which could not be loaded (${(error as NodeJS.ErrnoException).code ?? 'error'}). ` +
      'Install it beside @eventrelay/forwarder (npm install pg), or choose another `storage.type`.',
      'storage.type',
    );
  }
}

function passwordOf(url: string): string | undefined {
  try {
    const password = decodeURIComponent(new URL(url).password);
    return password === '' ? undefined : password;
  } catch {
    return undefined;
  }
}

type DeliveryRow = ClaimedRow & { lease: number; due_at: number };
/** A row of RECORD or RECORD_DELIVERED. */
type WrittenRow = { id: number; source: string; next: boolean };

interface AcceptRequest {
  readonly messages: readonly AcceptedMessage[];
  readonly lease: AcceptLease | undefined;
  /** The id the request's source must still have (see ForwarderStore#accept). */
  readonly sourceId: string | undefined;
  readonly resolve: (result: AcceptResult) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * A ForwarderStore on PostgreSQL, shared by any number of forwarder processes. Deliveries are
 * claimed with `FOR UPDATE SKIP LOCKED` and a lease; messageIds are unique per source across
 * instances (primary key); an audience's syncs take an advisory lock; one pruner runs at a time.
 * Accepted messages of the requests that arrive while a commit runs share the next transaction
 * (group commit per instance); `accept()` resolves once PostgreSQL committed it, so its
 * durability is the server's `synchronous_commit` (on by default: flushed to the WAL on disk).
 *
 * Open it with `PostgresStore.open(options)`: it connects, checks the server, and migrates the schema.
 */
export class PostgresStore implements ForwarderStore {
  private readonly pool: Pool;
  /**
   * Claims, outcomes and reads: committed with `synchronous_commit = off`, so they do not wait for
   * a WAL flush. A server crash may undo the last of them, which only means a delivery is attempted
   * again (at-least-once); the next durable commit flushes them too.
   *
   * And planned with `enable_seqscan = off`: every statement here finds its rows through an index.
   * The queue is nearly empty whenever autovacuum looks at it, and the planner then takes it for
   * empty until the next VACUUM: a plan kept from that moment (prepared statements keep theirs)
   * would read the whole queue for every claim and outcome once a burst or an outage fills it.
   * (A table with no index for a query is still read; this only takes the cheap-looking scan away.)
   * `jit = off` with it: a scan with no other path keeps the huge cost the setting gives it, which
   * would make the server compile such a statement to machine code, slowly, each time.
   */
  private readonly fast: Pool;
  private readonly audienceTurns = new KeyedTurns();
  private acceptQueue: AcceptRequest[] = [];
  private committing: Promise<void> | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  /** The sources and their settings (runtime setup), shared by every instance on the database. */
  readonly setup: PostgresSetup;
  /** The rate limits' send slots, shared by every instance on the database. */
  readonly rateBudget: PostgresRateBudget;
  /** The instances' views and the live stream's relay. */
  readonly cluster: PostgresCluster;
  /** Endpoint states every instance shares. */
  readonly endpoints: PostgresEndpointStore;
  /** What each source sends and its usage, added to by every instance. */
  readonly usage: PostgresUsageStore;
  /** The queue's batches, shared by every instance (rows locked per transaction). */
  readonly batches: PostgresBatches;
  readonly shared = true;
  /** This instance's one LISTEN connection, for every channel it follows. */
  private readonly listener: PostgresListener;

  private constructor(pool: Pool, fast: Pool, listener: () => Client, url: string) {
    this.pool = pool;
    this.fast = fast;
    this.rateBudget = new PostgresRateBudget(fast);
    this.listener = new PostgresListener(listener, (text) => hideSecret(text, url));
    this.setup = new PostgresSetup(pool, this.listener, () => this.assertOpen());
    this.cluster = new PostgresCluster(fast, this.listener);
    this.endpoints = new PostgresEndpointStore(fast);
    // Counts may lose their last second in a server crash (synchronous_commit off), never a message.
    this.usage = new PostgresUsageStore(fast, () => this.assertOpen());
    this.batches = new PostgresBatches(fast, () => this.assertOpen());
  }

  /** The delivery log's tables come with the store's schema, migrated when it opened. */
  openLog(options: DeliveryLogOptions): DeliveryLog {
    return new PostgresDeliveryLog(this.fast, options);
  }

  /**
   * Connections for the delivery log's tables (`PostgresDeliveryLog`): those that commit without
   * waiting for a WAL flush, since the log may lose its last lines in a server crash, never a message.
   */
  get logConnections(): Pool {
    return this.fast;
  }

  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const pg = loadDriver();
    const field = options.field ?? 'storage.url';
    const config: PoolConfig = {
      connectionString: options.url,
      max: options.poolSize ?? DEFAULTS.poolSize,
      connectionTimeoutMillis: options.connectTimeout ?? DEFAULTS.connectTimeout,
      // bigint columns hold epoch ms and ids: numbers, exact up to 2^53.
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          oid === pg.types.builtins.INT8 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as never,
      },
      application_name: 'eventrelay',
    };
    const pool = new pg.Pool(config);
    const fast = new pg.Pool({ ...config, max: Math.max(2, Math.ceil(config.max! / 2)), options: '-c synchronous_commit=off -c enable_seqscan=off -c jit=off' });
    // An idle connection dropped by the server (restart, failover) is replaced on the next query.
    for (const p of [pool, fast]) p.on('error', (error: Error) => log('postgres: idle connection failed: %s', hideSecret(error.message, options.url)));
    let client: PoolClient;
    try {
      client = await checkout(pool);
    } catch (error) {
      await Promise.all([pool.end(), fast.end()]).catch(() => {});
      // A server's answer (wrong password, unknown database) has a message worth showing; a socket error, its code.
      const fromServer = (error as { severity?: string }).severity !== undefined;
      const reason = fromServer ? (error as Error).message : ((error as NodeJS.ErrnoException).code ?? (error as Error).message);
      throw new StoreError(
        `Cannot connect to PostgreSQL at ${redactUrl(options.url)} (\`${field}\`): ${hideSecret(String(reason), options.url)}. ` +
        'Check that the server runs and accepts connections from here, and the user, password and database in the URL.',
        'ERR_STORE_UNAVAILABLE',
        { field },
      );
    }
    let failure: unknown;
    try {
      const applied = await migratePostgres(client);
      if (applied.length > 0) log('postgres: schema migrated to version %d', applied.at(-1));
    } catch (error) {
      failure = error;
    } finally {
      client.release();
    }
    if (failure !== undefined) {
      await Promise.all([pool.end(), fast.end()]).catch(() => {});
      if (failure instanceof StoreError) throw failure;
      throw new StoreError(
        `Cannot prepare the PostgreSQL schema at ${redactUrl(options.url)}: ${hideSecret((failure as Error).message, options.url)}`,
        'ERR_STORE_UNAVAILABLE',
        { field },
      );
    }
    const { max: _max, ...single } = config;
    return new PostgresStore(pool, fast, () => new pg.Client({ ...single, application_name: 'eventrelay-listen' }), options.url);
  }

  /** Group commit: requests queue while a commit runs, and the next commit takes them all. */
  accept(messages: readonly AcceptedMessage[], lease?: AcceptLease, sourceId?: string): Promise<AcceptResult> {
    return new Promise((resolve, reject) => {
      this.assertOpen();
      this.acceptQueue.push({ messages, lease, sourceId, resolve, reject });
      this.commitNext();
    });
  }

  private commitNext(): void {
    if (this.committing !== undefined || this.acceptQueue.length === 0) return;
    // Whole requests, up to GROUP_MESSAGES messages (at least one request): one statement stays
    // bounded. A source's name checked against two ids (a source deleted and made again between
    // two requests) ends the group: the statement checks each name once.
    let take = 0;
    const ids = new Map<string, string | undefined>();
    for (let messages = 0; take < this.acceptQueue.length; take++) {
      const request = this.acceptQueue[take]!;
      if (take > 0 && messages + request.messages.length > GROUP_MESSAGES) break;
      const name = request.messages[0]?.source;
      if (name !== undefined) {
        if (ids.has(name) && ids.get(name) !== request.sourceId) break;
        ids.set(name, request.sourceId);
      }
      messages += request.messages.length;
    }
    const group = this.acceptQueue.splice(0, take);
    this.committing = this.commitGroup(group).finally(() => {
      this.committing = undefined;
      this.commitNext();
    });
  }

  /**
   * One statement, so one round trip and one commit: the messages new to the store, their
   * deliveries (leased to this instance when it asked), and the counters. The work around the
   * query is in plain functions (acceptPlan, settleGroup): this async one stays small for the JIT.
   */
  private async commitGroup(group: readonly AcceptRequest[]): Promise<void> {
    const plan = acceptPlan(group);
    let rows: AcceptRow[];
    try {
      // Named: prepared once per connection, so the server does not parse and plan it per commit.
      const statement = plan.ordered ? { name: 'eventrelay-accept-ordered', text: ACCEPT_ORDERED } : { name: 'eventrelay-accept', text: ACCEPT };
      rows = (await this.pool.query<AcceptRow>({ ...statement, values: plan.values })).rows;
    } catch (error) {
      for (const request of group) request.reject(error);
      return;
    }
    settleGroup(group, plan, rows);
  }

  async enqueue(deliveries: readonly NewDelivery[]): Promise<void> {
    this.assertOpen();
    if (deliveries.length === 0) return;
    await this.pool.query({ name: 'eventrelay-enqueue', text: INSERT_DELIVERIES, values: deliveryArrays(deliveries) });
  }

  async claim(source: string, now: number, limit: number, lease: LeaseRequest): Promise<PendingDelivery[]> {
    this.assertOpen();
    const { rows } = await this.fast.query<DeliveryRow>({
      name: 'eventrelay-claim',
      text: CLAIM,
      values: [source, now, limit, lease.owner, now + lease.ms],
    });
    rows.sort((a, b) => a.due_at - b.due_at || a.id - b.id);
    return rows.map((row) => toPendingDelivery(row, row.lease, row.due_at));
  }

  async waitingFor(source: string, messageId: string): Promise<string | undefined> {
    this.assertOpen();
    const { rows } = await this.fast.query<{ message_id: string }>(
      QUEUE.waitingFor,
      [source, messageId],
    );
    return rows[0]?.message_id;
  }

  async nextDueAfter(source: string, now: number): Promise<number | undefined> {
    this.assertOpen();
    const { rows } = await this.fast.query<{ at: number | null }>({
      name: 'eventrelay-next-due',
      // One step of the pending index: retries due later, and the leases of hand-overs (whose
      // next_attempt_at is the lease's end). The end of a claim's lease is not looked for: the
      // row is due already (the claim leaves next_attempt_at alone, to stay a HOT update), and
      // the least leased_until of the due rows would read every one of them, under a burst the
      // whole queue, each time. A claim that lapses is found by the next claim (see nextDueAfter).
      text: QUEUE.nextDue,
      values: [source, now],
    });
    return rows[0]?.at ?? undefined;
  }

  async record(outcomes: readonly DeliveryOutcome[]): Promise<RecordResult> {
    this.assertOpen();
    if (outcomes.length === 0) return { recorded: 0, stale: [], released: [] };
    const delivered = deliveredIds(outcomes);
    const { rows } = delivered !== undefined
      ? await this.fast.query<WrittenRow>({ name: 'eventrelay-record-delivered', text: RECORD_DELIVERED, values: [numberArray(delivered), shard()] })
      : await this.writeOutcomes(outcomes);
    const written = new Set<number>();
    const released: string[] = [];
    for (const r of rows) {
      written.add(Number(r.id));
      if (r.next) released.push(r.source);
    }
    let missed: DeliveryOutcome[] | undefined;
    for (const o of outcomes) if (!written.has(o.id) && o.status === 'delivered') (missed ??= []).push(o);
    if (missed !== undefined) for (const id of await this.recordAbandoned(missed)) written.add(id);
    const stale: number[] = [];
    for (const o of outcomes) if (!written.has(o.id)) stale.push(o.id);
    return { recorded: written.size, stale, released };
  }

  /** Delivered outcomes of deliveries their source's deletion gave up under the same lease (see RECORD_ABANDONED). */
  private async recordAbandoned(outcomes: readonly DeliveryOutcome[]): Promise<number[]> {
    const sorted = outcomes.slice().sort((a, b) => a.id - b.id);
    const { rows } = await this.fast.query<{ id: number }>({
      name: 'eventrelay-record-abandoned',
      text: RECORD_ABANDONED,
      values: [numberArray(sorted.map((o) => o.id)), numberArray(sorted.map((o) => o.lease)), shard()],
    });
    return rows.map((r) => Number(r.id));
  }

  private writeOutcomes(outcomes: readonly DeliveryOutcome[]) {
    const columns = outcomeColumns(outcomes);
    return this.fast.query<WrittenRow>({
      name: 'eventrelay-record',
      text: RECORD,
      values: [
        numberArray(columns.id),
        numberArray(columns.lease),
        numberArray(columns.status),
        numberArray(columns.attempts),
        numberArray(columns.firstAt),
        numberArray(columns.at),
        textArray(columns.error),
        shard(),
      ],
    });
  }

  async syncAudience(
    source: string,
    audienceName: string,
    userIds: readonly string[],
    plan: (change: AudienceChange) => readonly NewDelivery[],
  ): Promise<AudienceChange> {
    this.assertOpen();
    // Compared with what is stored, so in the form it is stored in.
    const audience = pgText(audienceName);
    const members = userIds.map(pgText);
    const key = `${source}\n${audience}`;
    return this.audienceTurns.run(key, async () => {
      const client = await checkout(this.pool);
      try {
        // Serialized across instances: the lock is held for the whole sync, on this connection.
        await client.query(QUEUE.audienceLock, [LOCK_CLASS + LOCKS.audience, key]);
        try {
          const synced = (await client.query(QUEUE.audienceSynced, [source, audience])).rowCount! > 0;
          let current: Set<string> | undefined;
          if (synced) {
            current = new Set();
            for (let after = ''; ;) {
              const page = await client.query<{ user_id: string }>(
                QUEUE.audienceMembers,
                [source, audience, after],
              );
              for (const row of page.rows) current.add(row.user_id);
              if (page.rows.length < AUDIENCE_CHUNK) break;
              after = page.rows[page.rows.length - 1]!.user_id;
            }
          }
          const change = await audienceChange(current, members);
          const chunks = audienceChunks(change);
          if (chunks.length === 0) chunks.push({ firstSync: change.firstSync, added: [], removed: [] });
          // One transaction per chunk, each with its notices.
          for (const chunk of chunks) {
            this.assertOpen();
            const deliveries = plan(chunk);
            await client.query('BEGIN');
            try {
              if (chunk.added.length > 0) {
                await client.query(
                  QUEUE.memberAdd,
                  [source, audience, chunk.added],
                );
              }
              if (chunk.removed.length > 0) {
                await client.query(QUEUE.memberRemove, [source, audience, chunk.removed]);
              }
              await client.query(
                QUEUE.audienceMark,
                [source, audience, Date.now()],
              );
              if (deliveries.length > 0) await client.query(INSERT_DELIVERIES, deliveryArrays(deliveries));
              await client.query('COMMIT');
            } catch (error) {
              await client.query('ROLLBACK').catch(() => {});
              throw error;
            }
          }
          return change;
        } finally {
          await client.query(QUEUE.audienceUnlock, [LOCK_CLASS + LOCKS.audience, key]).catch(() => {});
        }
      } finally {
        client.release();
      }
    });
  }

  async counts(): Promise<StoreCounts> {
    this.assertOpen();
    const [totals, queue] = await Promise.all([
      this.fast.query<{ name: string; value: number }>(QUEUE.counters),
      this.fast.query<{ pending: number; retrying: number; oldest: number | null }>(
        QUEUE.queue,
      ),
    ]);
    const byName = new Map(totals.rows.map((r) => [r.name, r.value]));
    const q = queue.rows[0]!;
    return {
      accepted: byName.get('accepted') ?? 0,
      duplicates: byName.get('duplicates') ?? 0,
      delivered: byName.get('delivered') ?? 0,
      failed: byName.get('failed') ?? 0,
      pending: q.pending,
      retrying: q.retrying,
      oldestPendingAt: q.oldest ?? undefined,
    };
  }

  /** One pruner at a time over all instances (an advisory lock); the others return 0 at once. */
  async prune(before: number): Promise<number> {
    this.assertOpen();
    const client = await checkout(this.pool);
    try {
      const locked = await client.query<{ ok: boolean }>(LOCK.tryLock, [LOCK_CLASS, LOCKS.prune]);
      if (!locked.rows[0]!.ok) return 0;
      let removed = 0;
      try {
        for (const statement of PRUNE) {
          for (;;) {
            if (this.closed) return removed;
            const changes = (await client.query(statement, [before])).rowCount ?? 0;
            removed += changes;
            if (changes < PRUNE_CHUNK) break;
          }
        }
        if (!this.closed) removed += await this.usage.prune(dayOf(before) - USAGE_DAYS_KEPT);
        return removed;
      } finally {
        await client.query(LOCK.unlock, [LOCK_CLASS, LOCKS.prune]);
      }
    } finally {
      client.release();
    }
  }

  /** Commits what was accepted already, then closes the pool. Returns the same promise when called again. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      while (this.committing !== undefined) await this.committing;
      this.closed = true;
      this.listener.close();
      await Promise.all([this.pool.end(), this.fast.end()]);
    })();
    return this.closing;
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreError('The store is closed', 'ERR_STORE_CLOSED');
  }
}

/** A row of ACCEPT: a message new to the store, with the id of its delivery when the commit leased it. */
interface AcceptRow {
  source: string;
  /** Null in the rows that name a live source. */
  message_id: string | null;
  id: number | null;
  destination: string | null;
}

/** A group commit's statement parameters, with what settleGroup needs to answer its requests. */
interface OutcomeColumns {
  readonly id: number[];
  readonly lease: number[];
  readonly status: number[];
  readonly attempts: number[];
  readonly firstAt: (number | null)[];
  readonly at: number[];
  readonly error: (string | null)[];
}

/**
 * The columns of `eventrelay-record`, by id (so that concurrent writers lock rows in one order),
 * built in one loop: arrays by push, never by Array#map, whose results have another elements
 * kind once their caller is optimized, which sent the statement's functions back to the interpreter.
 */
function outcomeColumns(outcomes: readonly DeliveryOutcome[]): OutcomeColumns {
  const sorted = outcomes.slice().sort((a, b) => a.id - b.id);
  const c: OutcomeColumns = { id: [], lease: [], status: [], attempts: [], firstAt: [], at: [], error: [] };
  for (const o of sorted) {
    c.id.push(o.id);
    c.lease.push(o.lease);
    c.attempts.push(o.attempts);
    c.firstAt.push(o.firstAttemptAt ?? null);
    if (o.status === 'retry') {
      c.status.push(PENDING);
      c.at.push(o.nextAttemptAt);
      c.error.push(o.error ?? null);
    } else {
      c.status.push(o.status === 'delivered' ? DELIVERED : FAILED);
      c.at.push(o.at);
      c.error.push(o.status === 'failed' ? o.reason : null);
    }
  }
  return c;
}

/** The ids in order (so that concurrent writers lock rows in one order), when every outcome is `delivered`; otherwise undefined. */
function deliveredIds(outcomes: readonly DeliveryOutcome[]): number[] | undefined {
  const ids: number[] = [];
  for (const o of outcomes) {
    if (o.status !== 'delivered') return undefined;
    ids.push(o.id);
  }
  return ids.sort((a, b) => a - b);
}

interface AcceptPlan {
  /** Each request's message keys, in order. */
  readonly keys: readonly (readonly string[])[];
  /** The instance the commit leases to (one owner per commit: an instance leases to itself). */
  readonly owner: string | undefined;
  /** Whether a delivery is ordered: ACCEPT_ORDERED then, with `$20`. */
  readonly ordered: boolean;
  readonly values: unknown[];
}

function acceptPlan(group: readonly AcceptRequest[]): AcceptPlan {
  // The first occurrence of a key in the group is the candidate; later ones are duplicates.
  const candidates = new Map<string, AcceptedMessage>();
  const keys: string[][] = [];
  for (const request of group) {
    const own: string[] = [];
    for (const m of request.messages) own.push(storedKey(m.source, m.messageId));
    keys.push(own);
  }
  /** The end of the lease each candidate's deliveries get, when its request asked for one. */
  const leaseEnd = new Map<AcceptedMessage, number>();
  /** The candidates in the order they came: their deliveries' ids follow it. */
  const arrival: AcceptedMessage[] = [];
  let owner: string | undefined;
  /** Each request's source and number of messages, for the counters. */
  const requestSource: string[] = [];
  const requestSize: number[] = [];
  /** Source names to check, with the id each must have (one per name in a group: see commitNext); and those not checked. */
  const checked = new Map<string, string>();
  const unchecked = new Set<string>();
  for (let r = 0; r < group.length; r++) {
    const request = group[r]!;
    const name = request.messages[0]?.source ?? '';
    requestSource.push(name);
    requestSize.push(request.messages.length);
    // Unchecked: every source its messages name (a request not from the ingestion API may mix them).
    if (request.sourceId === undefined) for (const m of request.messages) unchecked.add(m.source);
    else checked.set(name, request.sourceId);
    // Another instance's request is stored unleased.
    const lease = request.lease !== undefined && (owner ??= request.lease.owner) === request.lease.owner ? request.lease : undefined;
    for (let i = 0; i < request.messages.length; i++) {
      const key = keys[r]![i]!;
      if (candidates.has(key)) continue;
      const m = request.messages[i]!;
      candidates.set(key, m);
      arrival.push(m);
      if (lease !== undefined) leaseEnd.set(m, lease.now + lease.ms);
    }
  }
  // Sorted, so that two instances inserting the same ids lock them in the same order.
  const sorted = [...candidates.values()].sort((a, b) => compare(a.source, b.source) || compare(a.messageId, b.messageId));
  const source: string[] = [];
  const messageId: string[] = [];
  const receivedAt: number[] = [];
  const d = {
    owner: [] as string[],
    source: [] as string[],
    destination: [] as string[],
    kind: [] as string[],
    messageId: [] as string[],
    body: [] as string[],
    createdAt: [] as number[],
    leasedUntil: [] as (number | null)[],
    orderKey: [] as (string | null)[],
    /** Per delivery: whether it may be leased (see ACCEPT's `hd`); kept only when one is ordered. */
    wanted: [] as boolean[],
  };
  let ordered = false;
  /** User keys (source, key) met in the group so far: only the first delivery of each may be leased. */
  const seenKeys = new Set<string>();
  for (const m of sorted) {
    source.push(m.source);
    messageId.push(m.messageId);
    receivedAt.push(m.receivedAt);
  }
  for (const m of arrival) {
    const until = leaseEnd.get(m) ?? null;
    for (const x of m.deliveries) {
      // An ordered one only when it is the first of its key here (the statement decides the rest).
      let wanted = until !== null;
      if (x.orderKey !== undefined) {
        ordered = true;
        const userKey = `${m.source}\u0000${x.orderKey}`;
        if (seenKeys.has(userKey)) wanted = false;
        else seenKeys.add(userKey);
      }
      d.wanted.push(wanted);
      d.leasedUntil.push(wanted ? until : null);
      d.orderKey.push(x.orderKey ?? null);
      d.owner.push(m.messageId);
      d.source.push(m.source);
      d.destination.push(x.destination);
      d.kind.push(x.kind);
      d.messageId.push(x.messageId);
      d.body.push(x.body);
      d.createdAt.push(x.createdAt);
    }
  }
  const values = [
    textArray(source),
    textArray(messageId),
    numberArray(receivedAt),
    textArray(d.owner),
    textArray(d.source),
    textArray(d.destination),
    textArray(d.kind),
    textArray(d.messageId),
    textArray(d.body),
    numberArray(d.createdAt),
    shard(),
    textArray(requestSource),
    numberArray(d.leasedUntil),
    owner ?? null,
    textArray([...checked.keys()]),
    textArray([...checked.values()]),
    textArray([...unchecked]),
    numberArray(requestSize),
    textArray(d.orderKey),
  ];
  if (ordered) values.push(booleanArray(d.wanted));
  return { keys, owner, ordered, values };
}

/** Answers each request of a committed group: which of its messages were new, and the deliveries leased to it. */
function settleGroup(group: readonly AcceptRequest[], plan: AcceptPlan, rows: readonly AcceptRow[]): void {
  const stored = new Set<string>();
  /** Checked sources that still exist: the rows without a message. */
  const live = new Set<string>();
  /** Ids of the deliveries leased as they were stored, by key and destination. */
  const leasedIds = new Map<string, number>();
  for (const row of rows) {
    if (row.message_id === null) {
      live.add(row.source);
      continue;
    }
    const key = storedKey(row.source, row.message_id);
    stored.add(key);
    if (row.id !== null) leasedIds.set(`${key}\u0000${row.destination}`, row.id);
  }
  for (let r = 0; r < group.length; r++) {
    const request = group[r]!;
    const keys = plan.keys[r]!;
    const name = request.messages[0]?.source;
    if (request.sourceId !== undefined && name !== undefined && !live.has(name)) {
      request.reject(new SourceDeletedError(name));
      continue;
    }
    // Counted once: the first request of the group that carries it.
    const repeated: boolean[] = [];
    let count = 0;
    for (const key of keys) {
      const first = stored.delete(key);
      repeated.push(!first);
      if (first) count++;
    }
    if (request.lease === undefined || request.lease.owner !== plan.owner) {
      // One shape, leased or not (AcceptResult.leased).
      request.resolve({ stored: count, duplicates: request.messages.length - count, repeated, leased: undefined });
      continue;
    }
    const leased: PendingDelivery[] = [];
    for (let i = 0; i < request.messages.length; i++) {
      if (repeated[i]) continue;
      for (const x of request.messages[i]!.deliveries) {
        const id = leasedIds.get(`${keys[i]!}\u0000${x.destination}`);
        if (id !== undefined) leased.push(leasedDelivery(x, id));
      }
    }
    request.resolve({ stored: count, duplicates: request.messages.length - count, repeated, leased });
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function deliveryArrays(deliveries: readonly NewDelivery[]): unknown[] {
  return [
    textArray(deliveries.map((d) => d.source)),
    textArray(deliveries.map((d) => d.destination)),
    textArray(deliveries.map((d) => d.kind)),
    textArray(deliveries.map((d) => d.messageId)),
    textArray(deliveries.map((d) => d.body)),
    numberArray(deliveries.map((d) => d.createdAt)),
    textArray(deliveries.map((d) => d.orderKey ?? null)),
    deliveries.some((d) => d.orderKey !== undefined),
  ];
}

/** Removes the URL's password from a driver message, should one ever echo it. */
function hideSecret(text: string, url: string): string {
  const password = passwordOf(url);
  return password === undefined ? text : text.split(password).join('***');
}

/** Opens the PostgreSQL store, migrating its schema; several instances may share it. */
export function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  return PostgresStore.open(options);
}
