import { checkout } from './pg-checkout';
import type { Pool, PoolClient } from 'pg';
import { toKeyRecord, toSourceRecord } from '../sql-rows';
import type { KeyRow, SourceRow } from '../sql-rows';
import type { PostgresListener } from './postgres-listen';
import type { SetupOp, SetupSnapshot, SetupStore, SetupWriteResult } from '../contract';
import { ABANDONED, PENDING } from '../statuses';

/** The channel every setup write notifies, with the new revision as payload. */
export const SETUP_CHANNEL = 'eventrelay_setup';

class StepFailed extends Error {
  constructor(readonly result: Extract<SetupWriteResult, { ok: false }>) {
    super(result.reason);
  }
}

/**
 * The runtime setup on PostgreSQL, shared by every instance. A write locks the revision row (so
 * setup writes of all instances are serialized), applies its steps, bumps the revision and sends
 * `NOTIFY eventrelay_setup`, all in one transaction: the notification goes out at commit. Each
 * instance LISTENs on its one LISTEN connection (`PostgresListener`) and polls the revision as the
 * fallback.
 */
export class PostgresSetup implements SetupStore {
  readonly shared = true;

  constructor(
    private readonly pool: Pool,
    /** The instance's LISTEN connection. */
    private readonly listener: PostgresListener,
    private readonly guard: () => void,
  ) {}

  async read(): Promise<SetupSnapshot> {
    this.guard();
    // One statement: sources, keys and revision from the same snapshot.
    const { rows } = await this.pool.query<{ revision: number; sources: SourceRow[]; keys: KeyRow[] }>(
      `SELECT (SELECT revision FROM setup_revision WHERE id = 1) AS revision,
         coalesce((SELECT json_agg(s ORDER BY s.name) FROM sources s), '[]'::json) AS sources,
         coalesce((SELECT json_agg(k ORDER BY k.source, k.created_at, k.id) FROM source_keys k), '[]'::json) AS keys`,
    );
    const row = rows[0]!;
    return { revision: Number(row.revision), sources: row.sources.map(toSourceRecord), keys: row.keys.map(toKeyRecord) };
  }

  async revision(): Promise<number> {
    this.guard();
    const { rows } = await this.pool.query<{ revision: number }>({ name: 'eventrelay-setup-revision', text: 'SELECT revision FROM setup_revision WHERE id = 1' });
    return Number(rows[0]!.revision);
  }

  async write(ops: readonly SetupOp[]): Promise<SetupWriteResult> {
    this.guard();
    const client = await checkout(this.pool);
    try {
      await client.query('BEGIN');
      try {
        await client.query('SELECT revision FROM setup_revision WHERE id = 1 FOR UPDATE');
        let failedDeliveries = 0;
        for (const op of ops) failedDeliveries += await this.step(client, op);
        const { rows } = await client.query<{ revision: number }>('UPDATE setup_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision');
        const revision = Number(rows[0]!.revision);
        await client.query('SELECT pg_notify($1, $2)', [SETUP_CHANNEL, String(revision)]);
        await client.query('COMMIT');
        return { ok: true, revision, failedDeliveries };
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        if (error instanceof StepFailed) return error.result;
        throw error;
      }
    } finally {
      client.release();
    }
  }

  /** One step; returns the deliveries it failed. */
  private async step(client: PoolClient, op: SetupOp): Promise<number> {
    switch (op.op) {
      case 'create': {
        const r = op.source;
        const { rowCount } = await client.query(
          'INSERT INTO sources (name, id, enabled, webhooks, applied, settings, created_at, updated_at, schema) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING',
          [
            r.name,
            r.id,
            r.enabled,
            r.webhooks === undefined ? null : JSON.stringify(r.webhooks),
            r.applied ?? null,
            r.settings === undefined ? null : JSON.stringify(r.settings),
            r.createdAt,
            r.updatedAt,
            r.schema === undefined ? null : JSON.stringify(r.schema),
          ],
        );
        if (rowCount === 0) throw new StepFailed({ ok: false, reason: 'exists', name: r.name });
        return 0;
      }
      case 'update': {
        const sets = ['updated_at = $2'];
        const values: unknown[] = [op.name, op.at];
        if (op.enabled !== undefined) sets.push(`enabled = $${values.push(op.enabled)}`);
        if (op.webhooks !== undefined) sets.push(`webhooks = $${values.push(op.webhooks === null ? null : JSON.stringify(op.webhooks))}`);
        if (op.applied !== undefined) sets.push(`applied = $${values.push(op.applied)}`);
        if (op.settings !== undefined) sets.push(`settings = $${values.push(op.settings === null ? null : JSON.stringify(op.settings))}`);
        if (op.schema !== undefined) sets.push(`schema = $${values.push(op.schema === null ? null : JSON.stringify(op.schema))}`);
        const { rowCount } = await client.query(`UPDATE sources SET ${sets.join(', ')} WHERE name = $1`, values);
        if (rowCount === 0) throw new StepFailed({ ok: false, reason: 'missing', name: op.name });
        return 0;
      }
      case 'delete': {
        // Waits for accepts that locked the row (FOR KEY SHARE, see ACCEPT) to commit: the update
        // below, a statement of its own, then sees what they stored.
        const { rowCount } = await client.query('DELETE FROM sources WHERE name = $1', [op.name]);
        if (rowCount === 0) throw new StepFailed({ ok: false, reason: 'missing', name: op.name });
        await client.query('DELETE FROM source_keys WHERE source = $1', [op.name]);
        await client.query('DELETE FROM audience_members WHERE source = $1', [op.name]);
        await client.query('DELETE FROM audiences WHERE source = $1', [op.name]);
        const failed = await client.query(
          `UPDATE deliveries SET status = ${ABANDONED}, finished_at = $1, last_error = $2, leased_until = 0, lease_owner = NULL
           WHERE source = $3 AND status = ${PENDING}`,
          [op.at, op.reason, op.name],
        );
        const count = failed.rowCount ?? 0;
        if (count > 0) {
          await client.query(
            "INSERT INTO counters (name, shard, value) VALUES ('failed', 0, $1) ON CONFLICT (name, shard) DO UPDATE SET value = counters.value + EXCLUDED.value",
            [count],
          );
        }
        return count;
      }
      case 'add-key': {
        const k = op.key;
        const same = await client.query<{ id: string; source: string }>('SELECT id, source FROM source_keys WHERE digest = $1', [k.digest]);
        const found = same.rows[0];
        if (found !== undefined && found.source !== k.source) throw new StepFailed({ ok: false, reason: 'key-taken', name: found.source });
        if (found !== undefined) await client.query('UPDATE source_keys SET expires_at = NULL, origin = $2 WHERE id = $1', [found.id, k.origin]);
        else {
          await client.query('INSERT INTO source_keys (id, source, digest, last4, origin, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
            k.id,
            k.source,
            k.digest,
            k.last4,
            k.origin,
            k.createdAt,
            k.expiresAt ?? null,
          ]);
        }
        return 0;
      }
      case 'expire-keys':
        await client.query(
          `UPDATE source_keys SET expires_at = $2
           WHERE source = $1 AND NOT (id = ANY($3::text[])) AND ($4::text IS NULL OR origin = $4) AND (expires_at IS NULL OR expires_at > $2)`,
          [op.source, op.at, op.except, op.origin ?? null],
        );
        return 0;
    }
  }

  /**
   * Calls `onChange` on each notification of a setup change, and once after every (re)connection
   * of the instance's LISTEN connection (a change may have been missed meanwhile). While that
   * connection is down, the forwarder's polling covers the gap.
   */
  watch(onChange: () => void): () => void {
    const listening = this.listener.listen(SETUP_CHANNEL, () => onChange(), onChange);
    return () => listening.stop();
  }
}
