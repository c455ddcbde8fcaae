import { checkout } from './pg-driver';
import type { Pool, PoolClient } from 'pg';
import { toKeyRecord, toSourceRecord } from '../sql-rows';
import type { KeyRow, SourceRow } from '../sql-rows';
import type { PostgresListener } from './postgres-listen';
import type { SetupOp, SetupSnapshot, SetupStore, SetupWriteResult } from '../contract';
import { SETUP, updateSource } from './sql';

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
      SETUP.read,
    );
    const row = rows[0]!;
    return { revision: Number(row.revision), sources: row.sources.map(toSourceRecord), keys: row.keys.map(toKeyRecord) };
  }

  async revision(): Promise<number> {
    this.guard();
    const { rows } = await this.pool.query<{ revision: number }>({ name: 'eventrelay-setup-revision', text: SETUP.revision });
    return Number(rows[0]!.revision);
  }

  async write(ops: readonly SetupOp[]): Promise<SetupWriteResult> {
    this.guard();
    const client = await checkout(this.pool);
    try {
      await client.query('BEGIN');
      try {
        await client.query(SETUP.lockRevision);
        let failedDeliveries = 0;
        for (const op of ops) failedDeliveries += await this.step(client, op);
        const { rows } = await client.query<{ revision: number }>(SETUP.bump);
        const revision = Number(rows[0]!.revision);
        await client.query(SETUP.notify, [SETUP_CHANNEL, String(revision)]);
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
          SETUP.insertSource,
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
        const { rowCount } = await client.query(updateSource(sets), values);
        if (rowCount === 0) throw new StepFailed({ ok: false, reason: 'missing', name: op.name });
        return 0;
      }
      case 'delete': {
        // Waits for accepts that locked the row (FOR KEY SHARE, see ACCEPT) to commit: the update
        // below, a statement of its own, then sees what they stored.
        const { rowCount } = await client.query(SETUP.deleteSource, [op.name]);
        if (rowCount === 0) throw new StepFailed({ ok: false, reason: 'missing', name: op.name });
        await client.query(SETUP.deleteKeys, [op.name]);
        await client.query(SETUP.deleteMembers, [op.name]);
        await client.query(SETUP.deleteAudiences, [op.name]);
        const failed = await client.query(
          SETUP.failDeliveries,
          [op.at, op.reason, op.name],
        );
        const count = (failed.rows[0] as { n: number }).n;
        if (count > 0) {
          await client.query(
            SETUP.addFailed,
            [count],
          );
        }
        return count;
      }
      case 'add-key': {
        const k = op.key;
        const same = await client.query<{ id: string; source: string }>(SETUP.keyByDigest, [k.digest]);
        const found = same.rows[0];
        if (found !== undefined && found.source !== k.source) throw new StepFailed({ ok: false, reason: 'key-taken', name: found.source });
        if (found !== undefined) await client.query(SETUP.reviveKey, [found.id, k.origin]);
        else {
          await client.query(SETUP.insertKey, [
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
          SETUP.expireKeys,
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
