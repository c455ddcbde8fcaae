import type { Pool, PoolClient } from 'pg';
import createDebug from 'debug';
import { applyAttempt, FINAL_STATES } from './delivery-log';
import { BufferedDeliveryLog } from './buffered-log';
import type { LogOp } from './buffered-log';
import { toDeliveryDetail, toLoggedMessage } from './sql-rows';
import type { AttemptRow, LogRow } from './sql-rows';
import type {
  DeliveryDetail,
  DeliveryLog,
  DeliveryLogOptions,
  DeliveryState,
  LogCall,
  LoggedMessage,
  MessageQuery,
} from './delivery-log';

const log = createDebug('analytics:forwarder');

/** Its own tables beside the queue's, shared by every forwarder on the database. */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS log_messages (
  id bigserial PRIMARY KEY,
  source text NOT NULL,
  kind text NOT NULL,
  message_id text NOT NULL,
  type text,
  user_id text,
  received_at bigint NOT NULL,
  state text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  series integer NOT NULL DEFAULT 1,
  updated_at bigint NOT NULL,
  finished_at bigint,
  reason text,
  body text
);
CREATE INDEX IF NOT EXISTS log_messages_key ON log_messages (source, message_id);
CREATE INDEX IF NOT EXISTS log_messages_user ON log_messages (user_id);
CREATE INDEX IF NOT EXISTS log_messages_finished ON log_messages (finished_at) WHERE finished_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS log_attempts (
  id bigserial PRIMARY KEY,
  delivery_id bigint NOT NULL,
  series integer NOT NULL,
  attempt integer NOT NULL,
  at bigint NOT NULL,
  url text NOT NULL,
  status integer,
  error text,
  duration_ms integer NOT NULL,
  outcome text NOT NULL
);
CREATE INDEX IF NOT EXISTS log_attempts_delivery ON log_attempts (delivery_id);
`;

/** Advisory lock key of the log's schema creation (instances may start together). */
const SCHEMA_LOCK = 0x65726c67;
const PRUNE_CHUNK = 2000;

const COLUMNS = `id, source, kind, message_id, type, user_id, received_at, state, attempts, series, updated_at, finished_at, reason,
  body IS NOT NULL AS has_body`;

const FIND_LIVE = `SELECT id, series FROM log_messages WHERE source = $1 AND message_id = $2 AND state NOT IN ('duplicate', 'refused', 'filtered')
  ORDER BY id DESC LIMIT 1`;

/**
 * The delivery log on PostgreSQL, beside the shared queue: every instance writes its calls and
 * attempts there, so any instance's admin API sees them all. Writes are buffered and committed
 * together every 50 ms; a crash may cost the last lines of the log, never a message.
 */
export class PostgresDeliveryLog extends BufferedDeliveryLog implements DeliveryLog {
  private flushing: Promise<void> = Promise.resolve();
  private readonly live = new Map<string, { id: number; series: number }>();

  private constructor(
    private readonly pool: Pool,
    private readonly options: DeliveryLogOptions,
  ) {
    super();
  }

  static async open(pool: Pool, options: DeliveryLogOptions): Promise<PostgresDeliveryLog> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
      await client.query(SCHEMA);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
    return new PostgresDeliveryLog(pool, options);
  }

  /** Commits the buffered writes (after any flush in progress); failures are logged, never thrown. */
  flush(): Promise<void> {
    const ops = this.take();
    this.flushing = this.flushing.then(async () => {
      if (ops.length === 0) return;
      let client: PoolClient | undefined;
      let failure: Error | undefined;
      // A connection that breaks between two queries reports here, not as an uncaught 'error'.
      const onError = (error: Error) => (failure ??= error);
      try {
        client = await this.pool.connect();
        client.on('error', onError);
        await client.query('BEGIN');
        for (const op of ops) await this.applyOne(client, op);
        await client.query('COMMIT');
      } catch (error) {
        failure ??= error as Error;
        await client?.query('ROLLBACK').catch(() => {});
        this.live.clear();
        log('delivery log: could not write %d entries: %s', ops.length, failure.message);
      } finally {
        client?.off('error', onError);
        // A broken connection is dropped, not handed to the next user.
        client?.release(failure);
      }
    });
    return this.flushing;
  }

  private async applyOne(client: PoolClient, op: LogOp): Promise<void> {
    switch (op.op) {
      case 'accepted':
      case 'add': {
        const calls: LogCall[] = [];
        const seen = new Set<string>();
        for (const call of op.calls) {
          const key = `${call.source}\u0000${call.messageId}`;
          let duplicate = false;
          if (op.op === 'accepted' && op.duplicates > 0) {
            duplicate = seen.has(key) || this.live.has(key) || (await client.query(FIND_LIVE, [call.source, call.messageId])).rowCount !== 0;
          }
          seen.add(key);
          calls.push(duplicate ? { ...call, state: 'duplicate', body: undefined, reason: 'The source sent this messageId before; not forwarded again' } : call);
        }
        const { rows } = await client.query<{ id: number; source: string; message_id: string; state: string }>(
          `INSERT INTO log_messages (source, kind, message_id, type, user_id, received_at, state, updated_at, finished_at, reason, body)
           SELECT s, k, m, t, u, r, st, r, CASE WHEN st = 'pending' THEN NULL ELSE r END, re, b
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::text[], $9::text[])
             AS x(s, k, m, t, u, r, st, re, b)
           RETURNING id, source, message_id, state`,
          [
            calls.map((c) => c.source),
            calls.map((c) => c.kind),
            calls.map((c) => c.messageId),
            calls.map((c) => c.type ?? null),
            calls.map((c) => c.userId ?? null),
            calls.map((c) => c.receivedAt),
            calls.map((c) => c.state),
            calls.map((c) => c.reason ?? null),
            calls.map((c) => (c.state === 'pending' ? (c.body ?? null) : null)),
          ],
        );
        for (const row of rows) if (row.state === 'pending') this.live.set(`${row.source}\u0000${row.message_id}`, { id: row.id, series: 1 });
        return;
      }
      case 'attempt': {
        const { record } = op;
        const key = `${record.source}\u0000${record.messageId}`;
        const found = this.live.get(key) ?? (await client.query<{ id: number; series: number }>(FIND_LIVE, [record.source, record.messageId])).rows[0];
        if (found === undefined) return;
        await client.query(
          `INSERT INTO log_attempts (delivery_id, series, attempt, at, url, status, error, duration_ms, outcome)
           SELECT $1, $2, $3, $4, u, s, e, d, $5 FROM unnest($6::text[], $7::int[], $8::text[], $9::int[]) AS x(u, s, e, d)`,
          [
            found.id,
            found.series,
            record.attempt,
            record.at,
            record.outcome,
            record.urls.map((u) => u.url),
            record.urls.map((u) => u.status),
            record.urls.map((u) => u.error),
            record.urls.map((u) => u.durationMs),
          ],
        );
        const next = { state: 'pending' as DeliveryState, attempts: 0, updatedAt: 0, finishedAt: null as number | null, reason: null as string | null };
        applyAttempt(next, record);
        const erase = next.state === 'delivered' && this.options.keepDelivered === 0;
        await client.query(
          `UPDATE log_messages SET state = $1, attempts = attempts + 1, updated_at = $2, finished_at = $3, reason = $4,
           body = CASE WHEN $5 THEN NULL ELSE body END WHERE id = $6`,
          [next.state, next.updatedAt, next.finishedAt, next.reason, erase, found.id],
        );
        if (FINAL_STATES.has(next.state)) this.live.delete(key);
        return;
      }
      case 'replayed': {
        const { rows } = await client.query<{ series: number; source: string; message_id: string }>(
          `UPDATE log_messages SET series = series + 1, state = 'pending', finished_at = NULL, updated_at = $1, reason = NULL WHERE id = $2
           RETURNING series, source, message_id`,
          [op.at, op.id],
        );
        if (rows[0] !== undefined) this.live.set(`${rows[0].source}\u0000${rows[0].message_id}`, { id: op.id, series: rows[0].series });
        return;
      }
    }
  }

  async list(query: MessageQuery): Promise<LoggedMessage[]> {
    await this.flush();
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (column: string, op: string, value: unknown) => {
      params.push(value);
      where.push(`${column} ${op} $${params.length}`);
    };
    if (query.source !== undefined) add('source', '=', query.source);
    if (query.state !== undefined) add('state', '=', query.state);
    if (query.type !== undefined) add('type', '=', query.type);
    if (query.messageId !== undefined) add('message_id', '=', query.messageId);
    if (query.userId !== undefined) add('user_id', '=', query.userId);
    if (query.since !== undefined) add('received_at', '>=', query.since);
    if (query.until !== undefined) add('received_at', '<', query.until);
    if (query.beforeId !== undefined) add('id', '<', query.beforeId);
    params.push(query.limit);
    const { rows } = await this.pool.query<LogRow>(
      `SELECT ${COLUMNS} FROM log_messages ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map(toLoggedMessage);
  }

  async get(id: number): Promise<DeliveryDetail | undefined> {
    await this.flush();
    const { rows } = await this.pool.query<LogRow>(`SELECT ${COLUMNS}, body FROM log_messages WHERE id = $1`, [id]);
    return rows[0] === undefined ? undefined : this.detail(rows[0]);
  }

  private async detail(row: LogRow): Promise<DeliveryDetail> {
    const { rows } = await this.pool.query<AttemptRow>(
      'SELECT series, attempt, at, url, status, error, duration_ms, outcome FROM log_attempts WHERE delivery_id = $1 ORDER BY id',
      [row.id],
    );
    return toDeliveryDetail(row, rows);
  }

  async failed(source: string, since: number, until: number): Promise<DeliveryDetail[]> {
    await this.flush();
    const { rows } = await this.pool.query<LogRow>(
      `SELECT ${COLUMNS}, body FROM log_messages WHERE source = $1 AND state = 'failed' AND body IS NOT NULL AND received_at >= $2 AND received_at < $3
       ORDER BY id`,
      [source, since, until],
    );
    return Promise.all(rows.map((row) => this.detail(row)));
  }

  async prune(before: number, now: number): Promise<number> {
    await this.flush();
    let removed = 0;
    for (;;) {
      if (this.closed) return removed;
      const { rows } = await this.pool.query<{ id: number }>(`SELECT id FROM log_messages WHERE finished_at < $1 LIMIT ${PRUNE_CHUNK}`, [before]);
      if (rows.length === 0) break;
      const ids = rows.map((r) => r.id);
      removed += (await this.pool.query('DELETE FROM log_attempts WHERE delivery_id = ANY($1::bigint[])', [ids])).rowCount ?? 0;
      removed += (await this.pool.query('DELETE FROM log_messages WHERE id = ANY($1::bigint[])', [ids])).rowCount ?? 0;
      if (rows.length < PRUNE_CHUNK) break;
    }
    await this.pool.query(`UPDATE log_messages SET body = NULL WHERE state = 'delivered' AND finished_at < $1 AND body IS NOT NULL`, [
      now - this.options.keepDelivered,
    ]);
    return removed;
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
  }
}
