import { checkout } from './pg-checkout';
import { createRequire } from 'node:module';
import { booleanArray, numberArray, pgText, storedKey, textArray } from './pg-values';
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
import { dayOf, USAGE_DAYS_KEPT } from '../usage';
import type { DeliveryLog, DeliveryLogOptions } from '../contract';
import { SourceDeletedError } from '../contract';
import { ABANDONED, DELIVERED, FAILED, PENDING } from '../statuses';
import { redactUrl } from '../../redact';
import type { AcceptedMessage, AcceptLease, AcceptResult, AudienceChange, DeliveryOutcome, ForwarderStore, LeaseRequest, NewDelivery, PendingDelivery, RecordResult, StoreCounts } from '../contract';
import { AUDIENCE_CHUNK, audienceChange, audienceChunks, KeyedTurns } from '../audience-change';

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
/** Rows removed per statement when pruning. */
const PRUNE_CHUNK = 2000;
/** Counter rows per name: each commit adds to a random one, so instances rarely wait on each other. */
const COUNTER_SHARDS = 16;

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
 * Deliveries made by no ingested call (replays, notices). Ordered ones (`$8`: any) take their
 * keys' locks first (`hd`, evaluated once before the first row: see ACCEPT), so that their ids
 * come after those of a commit of the same user that leased one.
 */
const INSERT_DELIVERIES = `WITH hd AS (SELECT CASE WHEN $8::boolean THEN eventrelay_order_heads($1::text[], $7::text[], NULL) END AS heads)
INSERT INTO deliveries (source, destination, kind, message_id, body, created_at, next_attempt_at, order_key)
  SELECT s, d, k, m, b, c, c, q FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[]) WITH ORDINALITY AS x(s, d, k, m, b, c, q, n)
  WHERE (SELECT count(*) FROM hd) = 1
  ORDER BY n`;

/**
 * A group commit: the sources its requests were checked against that still exist (`live`: names
 * `$15` with ids `$16`, each row locked against deletion until the commit; `ok` adds the unchecked
 * names `$17`), the messages of those sources new to the store (`m`), their deliveries (`d`,
 * leased with `$14` as owner until `$13` when the request asked; `$19` the user key of an ordered
 * one, leased only when it is the first of its key here and `hd` finds none of its key pending),
 * and the counters (`c`: `$12` and `$18` are each request's source and number of messages).
 * The rows are the new messages, then a row per live source (message_id null). Deliveries are
 * inserted in the order the calls came (`n`), so that their ids are that order: the order in
 * which the ordered ones of a user go (the messages are sorted, for the order of their locks).
 *
 * `FOR KEY SHARE`: a deletion's `DELETE FROM sources` waits for this commit (and then fails what
 * it stored), or this waits for the deletion and finds no row (and stores nothing). A change of a
 * source's settings (an update of other columns) does not wait for it, nor it for the change.
 *
 * Two forms, each prepared once: ACCEPT, and ACCEPT_ORDERED for a commit with ordered deliveries.
 * There `hd` (`$20`: which deliveries may be leased) locks the user keys of the ordered deliveries
 * and tells which may be leased (eventrelay_order_heads). `live`'s filter on it makes it run once,
 * before the first message row is inserted: every commit takes those locks before any other, so
 * two commits of one user never wait for each other's rows.
 */
const acceptStatement = (ordered: boolean) => `WITH ${ordered ? 'hd AS (SELECT eventrelay_order_heads($5::text[], $19::text[], $20::boolean[]) AS heads),' : ''}
live AS (
  SELECT s.name FROM sources s JOIN unnest($15::text[], $16::text[]) AS q(n, i) ON s.name = q.n AND s.id = q.i
  ${ordered ? 'WHERE (SELECT count(*) FROM hd) = 1' : ''}
  FOR KEY SHARE OF s),
ok AS (SELECT name FROM live UNION ALL SELECT unnest($17::text[])),
m AS (
  INSERT INTO messages (source, message_id, received_at)
  SELECT x.s, x.m, x.r FROM unnest($1::text[], $2::text[], $3::bigint[]) AS x(s, m, r) WHERE x.s IN (SELECT name FROM ok)
  ON CONFLICT DO NOTHING RETURNING source, message_id),
n AS (SELECT coalesce(sum(r.n), 0)::bigint AS total FROM unnest($12::text[], $18::bigint[]) AS r(s, n) WHERE r.s IN (SELECT name FROM ok)),
d AS (
  INSERT INTO deliveries (source, destination, kind, message_id, body, created_at, next_attempt_at, lease, lease_owner, leased_until, order_key)
  SELECT x.s, x.d, x.k, x.m, x.b, x.c, coalesce(x.l, x.c), CASE WHEN x.l IS NULL THEN 0 ELSE 1 END, CASE WHEN x.l IS NOT NULL THEN $14 END, coalesce(x.l, 0), x.q
  FROM (SELECT y.o, y.s, y.d, y.k, y.m, y.b, y.c, ${ordered ? 'CASE WHEN y.q IS NULL OR (SELECT heads FROM hd)[y.n] THEN y.l END' : 'y.l'} AS l, y.q, y.n
    FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[], $13::bigint[], $19::text[])
    WITH ORDINALITY AS y(o, s, d, k, m, b, c, l, q, n)) x
  JOIN m ON m.source = x.s AND m.message_id = x.o
  ORDER BY x.n
  RETURNING id, source, message_id, destination, lease),
c AS (
  INSERT INTO counters (name, shard, value)
  SELECT v.name, $11, v.value FROM n, LATERAL (VALUES ('accepted', n.total), ('duplicates', n.total - (SELECT count(*) FROM m))) AS v(name, value)
  ON CONFLICT (name, shard) DO UPDATE SET value = counters.value + EXCLUDED.value)
SELECT m.source, m.message_id, d.id, d.destination FROM m LEFT JOIN d ON d.lease = 1 AND d.source = m.source AND d.message_id = m.message_id
UNION ALL SELECT name, NULL, NULL, NULL FROM live`;
const ACCEPT = acceptStatement(false);
const ACCEPT_ORDERED = acceptStatement(true);

/**
 * A claim: up to `$3` deliveries of source `$1` due at `$2` (their retry time and any lease ended),
 * oldest first, leased to `$4` until `$5`; an ordered one (`order_key`) only when no older one of
 * its key is pending, leased or not (a row another claim holds is skipped, and the rows behind it
 * see it pending: two instances never take two of a key). It writes only columns no index
 * covers: a HOT update, in place on the row's page.
 */
export const CLAIM = `WITH c AS (
   SELECT id, greatest(next_attempt_at, leased_until) AS due_at FROM deliveries p
   WHERE status = ${PENDING} AND source = $1 AND next_attempt_at <= $2 AND leased_until <= $2
   AND (order_key IS NULL OR NOT EXISTS (
     SELECT 1 FROM deliveries e WHERE e.status = ${PENDING} AND e.order_key IS NOT NULL AND e.source = p.source AND e.order_key = p.order_key AND e.id < p.id))
   ORDER BY next_attempt_at, id LIMIT $3
   FOR UPDATE SKIP LOCKED)
 UPDATE deliveries d SET lease = d.lease + 1, lease_owner = $4, leased_until = $5
 FROM c WHERE d.id = c.id
 RETURNING d.id, d.lease, d.source, d.destination, d.kind, d.message_id, d.body, d.created_at, d.attempts, d.first_attempt_at, d.order_key, c.due_at`;

/**
 * For a written outcome (`w`: id, status, source, order_key): an ordered delivery finished with
 * another of its key pending. The statement's snapshot still shows the row itself pending, hence
 * `id <>`; unordered rows never read the index.
 */
const NEXT_OF_KEY = `CASE WHEN w.order_key IS NULL OR w.status = ${PENDING} THEN false ELSE EXISTS (
   SELECT 1 FROM deliveries e WHERE e.status = ${PENDING} AND e.order_key IS NOT NULL AND e.source = w.source AND e.order_key = w.order_key AND e.id <> w.id) END`;

/**
 * Outcomes, one per row of the arrays: a delivered delivery's row is deleted (its count is kept),
 * one row version less than an update, and no index entries; retries and failures are updated,
 * each only with its lease. Returns the ids written, each with `next`: it was an ordered delivery,
 * now finished, with another of its key pending (RecordResult.released). `d.status + 0` rather than `d.status`: the
 * pending index (`WHERE status = 0`) holds id only as its third column, and a planner that takes
 * the queue for empty would otherwise pick it to look rows up by id, reading all of it each time.
 */
export const RECORD = `WITH o AS (
   SELECT * FROM unnest($1::bigint[], $2::int[], $3::smallint[], $4::int[], $5::bigint[], $6::bigint[], $7::text[])
     AS o(id, lease, status, attempts, first_at, at, error)),
 x AS (
   DELETE FROM deliveries d USING o
   WHERE d.id = o.id AND o.status = ${DELIVERED} AND d.status + 0 = ${PENDING}
   RETURNING d.id, o.status, d.source, d.order_key),
 u AS (
   UPDATE deliveries d SET
     status = o.status,
     attempts = o.attempts,
     first_attempt_at = o.first_at,
     next_attempt_at = CASE WHEN o.status = ${PENDING} THEN o.at ELSE d.next_attempt_at END,
     finished_at = CASE WHEN o.status = ${PENDING} THEN NULL ELSE o.at END,
     last_error = o.error,
     leased_until = 0,
     lease_owner = NULL
   FROM o
   WHERE d.id = o.id AND o.status <> ${DELIVERED} AND d.status + 0 = ${PENDING} AND d.lease = o.lease
   RETURNING d.id, o.status, d.source, d.order_key, o.at),
 h AS (
   UPDATE deliveries e SET next_attempt_at = u.at FROM u
   WHERE u.status = ${PENDING} AND u.order_key IS NOT NULL AND e.status = ${PENDING} AND e.order_key IS NOT NULL
     AND e.source = u.source AND e.order_key = u.order_key AND e.id > u.id AND e.next_attempt_at < u.at),
 w AS (SELECT id, status, source, order_key FROM x UNION ALL SELECT id, status, source, order_key FROM u),
 c AS (
   INSERT INTO counters (name, shard, value)
   SELECT CASE WHEN status = ${DELIVERED} THEN 'delivered' ELSE 'failed' END, $8, count(*) FROM w
   WHERE status <> ${PENDING} GROUP BY status
   ON CONFLICT (name, shard) DO UPDATE SET value = counters.value + EXCLUDED.value)
 SELECT id, source, ${NEXT_OF_KEY} AS next FROM w`;

/**
 * Delivered outcomes RECORD and RECORD_DELIVERED did not write, for deliveries given up by their
 * source's deletion while the same lease was out (an attempt in flight at the deletion): deleted
 * as delivered, and counted delivered instead of failed. Run only for such outcomes (rare).
 */
export const RECORD_ABANDONED = `WITH x AS (
   DELETE FROM deliveries d USING unnest($1::bigint[], $2::int[]) AS o(id, lease)
   WHERE d.id = o.id AND d.status + 0 = ${ABANDONED} AND d.lease = o.lease
   RETURNING d.id),
 c AS (
   INSERT INTO counters (name, shard, value)
   SELECT v.name, $3, v.value FROM (SELECT count(*) AS n FROM x) k, LATERAL (VALUES ('delivered', k.n), ('failed', -k.n)) AS v(name, value)
   WHERE k.n > 0
   ON CONFLICT (name, shard) DO UPDATE SET value = counters.value + EXCLUDED.value)
 SELECT id FROM x`;

/**
 * RECORD for the usual batch, every outcome delivered: the rows deleted by id (whoever holds
 * their lease, as RECORD does), and the count. One array instead of seven, no join.
 */
export const RECORD_DELIVERED = `WITH w AS (
   DELETE FROM deliveries WHERE id = ANY($1::bigint[]) AND status + 0 = ${PENDING}
   RETURNING id, source, order_key, ${DELIVERED} AS status),
 c AS (
   INSERT INTO counters (name, shard, value)
   SELECT 'delivered', $2, count(*) FROM w HAVING count(*) > 0
   ON CONFLICT (name, shard) DO UPDATE SET value = counters.value + EXCLUDED.value)
 SELECT id, source, ${NEXT_OF_KEY} AS next FROM w`;

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
      `SELECT b.message_id FROM deliveries d JOIN deliveries b
         ON b.status = ${PENDING} AND b.order_key IS NOT NULL AND b.source = d.source AND b.order_key = d.order_key AND b.id < d.id
       WHERE d.status = ${PENDING} AND d.order_key IS NOT NULL AND d.source = $1 AND d.message_id = $2 ORDER BY b.id LIMIT 1`,
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
      text: `SELECT min(next_attempt_at) AS at FROM deliveries WHERE status = ${PENDING} AND source = $1 AND next_attempt_at > $2`,
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
        await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [LOCK_CLASS + LOCKS.audience, key]);
        try {
          const synced = (await client.query('SELECT 1 FROM audiences WHERE source = $1 AND audience = $2', [source, audience])).rowCount! > 0;
          let current: Set<string> | undefined;
          if (synced) {
            current = new Set();
            for (let after = ''; ;) {
              const page = await client.query<{ user_id: string }>(
                `SELECT user_id FROM audience_members WHERE source = $1 AND audience = $2 AND user_id > $3 ORDER BY user_id LIMIT ${AUDIENCE_CHUNK}`,
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
                  'INSERT INTO audience_members (source, audience, user_id) SELECT $1, $2, unnest($3::text[]) ON CONFLICT DO NOTHING',
                  [source, audience, chunk.added],
                );
              }
              if (chunk.removed.length > 0) {
                await client.query('DELETE FROM audience_members WHERE source = $1 AND audience = $2 AND user_id = ANY($3::text[])', [source, audience, chunk.removed]);
              }
              await client.query(
                'INSERT INTO audiences (source, audience, synced_at) VALUES ($1, $2, $3) ON CONFLICT (source, audience) DO UPDATE SET synced_at = EXCLUDED.synced_at',
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
          await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [LOCK_CLASS + LOCKS.audience, key]).catch(() => {});
        }
      } finally {
        client.release();
      }
    });
  }

  async counts(): Promise<StoreCounts> {
    this.assertOpen();
    const [totals, queue] = await Promise.all([
      this.fast.query<{ name: string; value: number }>('SELECT name, sum(value)::bigint AS value FROM counters GROUP BY name'),
      this.fast.query<{ pending: number; retrying: number; oldest: number | null }>(
        `SELECT count(*)::int AS pending, count(*) FILTER (WHERE attempts > 0)::int AS retrying, min(created_at) AS oldest
         FROM deliveries WHERE status = ${PENDING}`,
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
      const locked = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [LOCK_CLASS, LOCKS.prune]);
      if (!locked.rows[0]!.ok) return 0;
      let removed = 0;
      try {
        for (const statement of [
          `DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE status <> ${PENDING} AND finished_at < $1 LIMIT ${PRUNE_CHUNK})`,
          `DELETE FROM messages WHERE (source, message_id) IN (SELECT source, message_id FROM messages WHERE received_at < $1 LIMIT ${PRUNE_CHUNK})`,
          // Write keys whose grace ended before the retention window: refused long since, forgotten now.
          'DELETE FROM source_keys WHERE expires_at IS NOT NULL AND expires_at < $1',
        ]) {
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
        await client.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_CLASS, LOCKS.prune]);
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

function shard(): number {
  return Math.floor(Math.random() * COUNTER_SHARDS);
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
